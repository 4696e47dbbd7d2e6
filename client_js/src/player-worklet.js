// AudioWorkletProcessor that plays streamed PCM from a JitterBuffer.
// Loaded with audioContext.audioWorklet.addModule(new URL('./player-worklet.js', import.meta.url)).
//
// Messages in  (port): {type:'config', prebufferMs?, growMs?, maxPrebufferMs?}
//                      {type:'begin', gen} {type:'push', samples: Float32Array} {type:'end'} {type:'clear', gen}
//                      {type:'reopen'}: more audio after 'end' on the same timeline (jitter-buffer.js)
// Messages out (port): {type:'playing'|'underrun'|'drained', ...}  (see jitter-buffer.js)
//                      {type:'stats', samplesPlayed, buffered, underruns, prebufferMs, state}
//                      every `statsEveryQuanta` render quanta while not idle, and once on clear.
// Every message out carries `gen`, the generation of the last 'begin'.

import { JitterBuffer } from './jitter-buffer.js';

class EmoStreamPlayerProcessor extends AudioWorkletProcessor {
  constructor(options) {
    super();
    const opts = (options && options.processorOptions) || {};
    this.buffer = new JitterBuffer({
      sampleRate, // AudioWorkletGlobalScope global: the context's rate
      prebufferMs: opts.prebufferMs,
      growMs: opts.growMs,
      maxPrebufferMs: opts.maxPrebufferMs,
    });
    this.statsEveryQuanta = opts.statsEveryQuanta || 8;
    this.quanta = 0;
    this.gen = 0; // utterance generation, echoed on every message so stale ones can be dropped
    this.port.onmessage = (event) => this.onMessage(event.data);
  }

  onMessage(msg) {
    const b = this.buffer;
    switch (msg.type) {
      case 'config':
        if (typeof msg.prebufferMs === 'number') b.prebufferMs = msg.prebufferMs;
        if (typeof msg.growMs === 'number') b.growMs = msg.growMs;
        if (typeof msg.maxPrebufferMs === 'number') b.maxPrebufferMs = msg.maxPrebufferMs;
        break;
      case 'begin':
        this.gen = msg.gen || 0;
        b.begin();
        break;
      case 'push':
        b.push(msg.samples);
        break;
      case 'end':
        b.end();
        break;
      case 'reopen':
        b.reopen();
        break;
      case 'clear':
        this.gen = msg.gen || 0;
        b.clear();
        this.postStats();
        break;
      default:
        break;
    }
  }

  postStats() {
    const b = this.buffer;
    this.port.postMessage({
      type: 'stats',
      samplesPlayed: b.samplesPlayed,
      buffered: b.buffered,
      underruns: b.underruns,
      prebufferMs: b.prebufferMs,
      state: b.state,
      frame: currentFrame,
      gen: this.gen,
    });
  }

  process(_inputs, outputs) {
    const output = outputs[0];
    const channel = output[0];
    if (!channel) return true;
    const events = this.buffer.render(channel);
    for (let c = 1; c < output.length; c++) output[c].set(channel);
    for (const ev of events) this.port.postMessage({ ...ev, frame: currentFrame, gen: this.gen });
    if (this.buffer.state !== 'idle' && ++this.quanta % this.statsEveryQuanta === 0) this.postStats();
    return true;
  }
}

registerProcessor('emostream-player', EmoStreamPlayerProcessor);
