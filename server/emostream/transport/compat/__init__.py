"""APIs of other TTS services, spoken by this server (docs/compat.md): ElevenLabs' text-to-speech
routes and WebSockets, Cartesia's WebSocket and HTTP routes. Each translates its messages to and
from the native protocol sans I/O (:mod:`.elevenlabs`, :mod:`.cartesia`); :mod:`.socket` and
:mod:`.speech` carry them out on the native connection and speech pipeline."""
