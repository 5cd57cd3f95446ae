"""Parts of SATE taken from models downloaded from the Hugging Face hub, read without `transformers`.

- files:     config.json and the weights of a downloaded model directory (safetensors or a torch .bin)
- settings:  what the `textual`/`decoder` (hf_marian) and `acoustic` (hf_wav2vec2, hf_hubert, hf_wavlm) config
             sections take from such a directory (pure Python: `sate config` reads it without torch)
- marian:    OPUS-MT (Marian) on ESPnet's post-norm Transformer blocks, its positions and its key names
- speech:    wav2vec2 / HuBERT / WavLM on torchaudio's modules, independent of batch padding
- load:      filling a built model from the directories, with the loaded-keys table and loud errors
- whisper, whisper_files, ctranslate2_file: Whisper's encoder (an acoustic side) from either directory format
- whisper_decoder, whisper_tokens, whisper_asr: Whisper's own decoder and vocabulary, greedy transcripts for the
             cascade SATE is compared with
"""
