// Mouth shapes on the playback clock (sans-I/O: no timers, no audio).
//
// The server computes a mouth shape for every 20 ms audio frame (server/emostream/stream/mouth.py:
// phoneme units and the audio's loudness) and sends them ahead of the audio as
// {type:'mouth', start_ms, frame_ms, open:[...], form:[...], viseme:[...]} (times on the
// stream's audio timeline). A MouthTrack holds them; advance(positionMs) — the position of the
// audio being heard, on the same timeline — gives the frame now heard when it changed since the
// last call (null otherwise), so that a driver (an avatar, VTube Studio) gets each shape once, on
// time, and skips the ones a late clock passed.

/** The shape of a closed, resting mouth. */
export const REST = Object.freeze({ open: 0, form: 0, viseme: 'sil', t: -1 });

export class MouthTrack {
  constructor() {
    /** @type {Array<{t: number, open: number, form: number, viseme: string}>} */
    this.frames = [];
    this._next = 0; // first frame not yet reached
    this.current = null; // the frame heard now (null before the first)
    this.end = 0; // where the last frame announced ends, ms
  }

  /** Add a `mouth` event's frames (events come in order). */
  add(event) {
    const step = event.frame_ms || 20;
    const n = Math.min(event.open.length, event.form.length, event.viseme.length);
    for (let i = 0; i < n; i++) {
      const t = event.start_ms + i * step;
      this.frames.push({ t, open: event.open[i], form: event.form[i], viseme: event.viseme[i] });
      this.end = t + step;
    }
  }

  /**
   * Move to `positionMs`: the frame heard there if it is not the one reported last, else null.
   * Past the last frame announced the mouth rests (REST, once).
   * @param {number} positionMs
   */
  advance(positionMs) {
    let reached = null;
    while (this._next < this.frames.length && this.frames[this._next].t <= positionMs) {
      reached = this.frames[this._next];
      this._next += 1;
    }
    if (reached === null && this.current !== REST && this.current !== null
        && this._next >= this.frames.length && positionMs >= this.end) {
      reached = REST;
    }
    if (reached === null || reached === this.current) return null;
    this.current = reached;
    return reached;
  }

  /** Frames not yet reached. */
  get pending() {
    return this.frames.length - this._next;
  }
}
