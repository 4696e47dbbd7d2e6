// Playout buffer for streamed audio: a growable ring of float samples with a
// pre-buffer, underrun counting and instant clearing (barge-in).
//
// Sans-I/O: it knows nothing about AudioWorklet or messages. The worklet
// (player-worklet.js) feeds it and calls render() once per render quantum;
// unit tests drive it directly.
//
// States:
//   idle       nothing to play (before begin(), after the drain, after clear())
//   buffering  waiting until `prebuffer` samples are queued (or input ended)
//   playing    copying samples out
// An underrun is a render call in `playing` that finds fewer samples than it
// needs while input has not ended: it is counted, the pre-buffer grows by
// `growMs` (up to `maxPrebufferMs`) and the state goes back to buffering.

/**
 * @typedef {{type: 'playing', samplesPlayed: number, resumed: boolean}
 *   | {type: 'underrun', underruns: number, prebufferMs: number}
 *   | {type: 'drained', samplesPlayed: number, underruns: number}} BufferEvent
 */

export class JitterBuffer {
  /**
   * @param {object} [options]
   * @param {number} [options.sampleRate=48000] rate of the samples pushed and rendered
   * @param {number} [options.prebufferMs=60] audio queued before playback starts (<= 60 ms advised)
   * @param {number} [options.growMs=40] added to the pre-buffer after each underrun
   * @param {number} [options.maxPrebufferMs=300] ceiling for the grown pre-buffer
   * @param {number} [options.initialCapacitySeconds=4] ring size; it doubles when full
   */
  constructor({
    sampleRate = 48000,
    prebufferMs = 60,
    growMs = 40,
    maxPrebufferMs = 300,
    initialCapacitySeconds = 4,
  } = {}) {
    this.sampleRate = sampleRate;
    this.growMs = growMs;
    this.maxPrebufferMs = maxPrebufferMs;
    this.prebufferMs = Math.min(prebufferMs, maxPrebufferMs);
    this._ring = new Float32Array(Math.max(1024, Math.ceil(sampleRate * initialCapacitySeconds)));
    this._read = 0;
    this._count = 0;
    /** @type {'idle'|'buffering'|'playing'} */
    this.state = 'idle';
    this.ended = false;
    this.samplesPlayed = 0;
    this.underruns = 0;
    this._startedOnce = false;
  }

  /** Samples queued and not yet played. */
  get buffered() {
    return this._count;
  }

  /** Pre-buffer size in samples. */
  get prebufferSamples() {
    return Math.round((this.prebufferMs * this.sampleRate) / 1000);
  }

  /** Start a new utterance: empties the ring and zeroes the per-utterance counters. */
  begin() {
    this._read = 0;
    this._count = 0;
    this.state = 'buffering';
    this.ended = false;
    this.samplesPlayed = 0;
    this.underruns = 0;
    this._startedOnce = false;
  }

  /** Queue samples (copied). Pushing while idle implicitly begins an utterance. */
  push(samples) {
    if (this.state === 'idle') this.begin();
    const n = samples.length;
    if (n === 0) return;
    if (this._count + n > this._ring.length) this._grow(this._count + n);
    const cap = this._ring.length;
    const write = (this._read + this._count) % cap;
    const first = Math.min(n, cap - write);
    this._ring.set(samples.subarray(0, first), write);
    if (first < n) this._ring.set(samples.subarray(first), 0);
    this._count += n;
  }

  /** No more input for this utterance: play what is queued, then report `drained`. */
  end() {
    this.ended = true;
  }

  /**
   * More input after end(), on the same timeline (the next utterance of a room played back to
   * back): keeps the counters and what is queued; idle after a drain, it buffers again (the
   * silence between the two is not an underrun).
   */
  reopen() {
    this.ended = false;
    if (this.state === 'idle') this.state = 'buffering';
  }

  /** Barge-in: drop everything queued at once and go idle. */
  clear() {
    this._read = 0;
    this._count = 0;
    this.state = 'idle';
    this.ended = false;
  }

  /**
   * Fill `out` (one render quantum) and return what happened.
   * @param {Float32Array} out
   * @returns {BufferEvent[]}
   */
  render(out) {
    /** @type {BufferEvent[]} */
    const events = [];
    const need = out.length;
    if (this.state === 'buffering') {
      if (this._count >= this.prebufferSamples || (this.ended && this._count > 0)) {
        this.state = 'playing';
        events.push({ type: 'playing', samplesPlayed: this.samplesPlayed, resumed: this._startedOnce });
        this._startedOnce = true;
      } else if (this.ended && this._count === 0) {
        this.state = 'idle';
        events.push({ type: 'drained', samplesPlayed: this.samplesPlayed, underruns: this.underruns });
      }
    }
    if (this.state !== 'playing') {
      out.fill(0);
      return events;
    }
    const take = Math.min(need, this._count);
    this._copyOut(out, take);
    if (take < need) out.fill(0, take);
    if (take === need) return events;
    // Ran dry inside this quantum.
    if (this.ended) {
      this.state = 'idle';
      events.push({ type: 'drained', samplesPlayed: this.samplesPlayed, underruns: this.underruns });
    } else {
      this.underruns += 1;
      this.prebufferMs = Math.min(this.maxPrebufferMs, this.prebufferMs + this.growMs);
      this.state = 'buffering';
      events.push({ type: 'underrun', underruns: this.underruns, prebufferMs: this.prebufferMs });
    }
    return events;
  }

  _copyOut(out, n) {
    if (n === 0) return;
    const cap = this._ring.length;
    const first = Math.min(n, cap - this._read);
    out.set(this._ring.subarray(this._read, this._read + first), 0);
    if (first < n) out.set(this._ring.subarray(0, n - first), first);
    this._read = (this._read + n) % cap;
    this._count -= n;
    this.samplesPlayed += n;
  }

  _grow(minimum) {
    let cap = this._ring.length;
    while (cap < minimum) cap *= 2;
    const next = new Float32Array(cap);
    const old = this._ring;
    const first = Math.min(this._count, old.length - this._read);
    next.set(old.subarray(this._read, this._read + first), 0);
    if (first < this._count) next.set(old.subarray(0, this._count - first), first);
    this._ring = next;
    this._read = 0;
  }
}
