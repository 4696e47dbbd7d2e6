// Streaming linear-interpolation resampler (mono float32), used only when the
// stream's rate differs from the AudioContext's (e.g. PCM at 24 or 16 kHz into a
// 48 kHz context). Opus is always decoded straight at the context rate, so the
// usual path never resamples. State carries across chunks, so chunked output
// equals one-shot output.

export class LinearResampler {
  /**
   * @param {number} inputRate
   * @param {number} outputRate
   */
  constructor(inputRate, outputRate) {
    if (!(inputRate > 0 && outputRate > 0)) throw new RangeError('sample rates must be positive');
    this.inputRate = inputRate;
    this.outputRate = outputRate;
    this.step = inputRate / outputRate; // input samples per output sample
    this._pos = 0; // position of the next output sample, in input samples, relative to _prev
    this._prev = null; // last input sample of the previous chunk (index -1 of the next chunk)
  }

  get identity() {
    return this.inputRate === this.outputRate;
  }

  /**
   * @param {Float32Array} input
   * @returns {Float32Array}
   */
  process(input) {
    if (this.identity) return input;
    if (input.length === 0) return new Float32Array(0);
    // Virtual signal x: x[-1] = _prev (if any), x[0..n-1] = input.
    const hasPrev = this._prev !== null;
    const offset = hasPrev ? 1 : 0;
    const total = input.length + offset;
    const at = (i) => (hasPrev ? (i === 0 ? this._prev : input[i - 1]) : input[i]);
    // Output positions p = _pos + k*step (in the virtual signal) with p <= total - 1.
    const last = total - 1;
    const count = this._pos > last ? 0 : Math.floor((last - this._pos) / this.step) + 1;
    const out = new Float32Array(count);
    let p = this._pos;
    for (let k = 0; k < count; k++) {
      const i = Math.floor(p);
      const frac = p - i;
      const a = at(i);
      const b = i + 1 <= last ? at(i + 1) : a;
      out[k] = a + (b - a) * frac;
      p += this.step;
    }
    // Re-base so that the last input sample becomes index 0 of the next call's virtual signal.
    this._pos = p - last;
    this._prev = input[input.length - 1];
    return out;
  }

  reset() {
    this._pos = 0;
    this._prev = null;
  }
}
