// Minimal event emitter (no DOM dependency, so the client also runs under node).

export class Emitter {
  constructor() {
    /** @type {Map<string, Set<Function>>} */
    this._listeners = new Map();
  }

  /** Add a listener; returns a function that removes it. */
  on(type, fn) {
    if (!this._listeners.has(type)) this._listeners.set(type, new Set());
    this._listeners.get(type).add(fn);
    return () => this.off(type, fn);
  }

  off(type, fn) {
    const set = this._listeners.get(type);
    if (set) set.delete(fn);
  }

  /** Listen for one event; resolves with it. */
  once(type) {
    return new Promise((resolve) => {
      const off = this.on(type, (ev) => {
        off();
        resolve(ev);
      });
    });
  }

  emit(type, event) {
    const set = this._listeners.get(type);
    if (!set) return;
    for (const fn of [...set]) {
      try {
        fn(event);
      } catch (err) {
        // A listener's bug must not break the protocol handling.
        setTimeout(() => {
          throw err;
        }, 0);
      }
    }
  }
}
