// Word timestamps on the playback clock (sans-I/O: no timers, no audio).
//
// The server announces each segment's words before its audio ({type:'words', words:[{word,
// char_start, char_end, start_ms, end_ms, start_sample, end_sample}]}, times on the stream's
// audio timeline). A WordTrack holds them in order; advance(positionMs) — the position of the
// audio actually played, in the same timeline — returns the words that started since the last
// call, each once, in order.

export class WordTrack {
  constructor() {
    /** @type {Array<object>} every word announced, in order, each with its `index` */
    this.words = [];
    this._next = 0; // first word not yet reported as started
    this.positionMs = 0; // the furthest position seen
  }

  /** Add a `words` event's words (they come in order, segment after segment). */
  add(words) {
    for (const w of words || []) this.words.push({ ...w, index: this.words.length });
  }

  /**
   * Move the playback position; returns the words whose start has now been played.
   * @param {number} positionMs
   */
  advance(positionMs) {
    if (positionMs > this.positionMs) this.positionMs = positionMs;
    const started = [];
    while (this._next < this.words.length && this.words[this._next].start_ms <= this.positionMs) {
      started.push(this.words[this._next]);
      this._next += 1;
    }
    return started;
  }

  /** The word being played at the current position (the last one started), or null. */
  get current() {
    return this._next > 0 ? this.words[this._next - 1] : null;
  }

  /** Words played to their end at the current position. */
  played() {
    return this.words.filter((w) => w.end_ms <= this.positionMs);
  }
}
