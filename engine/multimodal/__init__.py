"""Images in the engine, for vision-language models.

| module           | owns                                                                 |
|------------------|----------------------------------------------------------------------|
| config           | MultimodalConfig: the caps on images and the two caches' budgets     |
| image_decode     | bytes -> a decoded image, caps checked before decoding; content hash |
| image_processor  | the model's own resize/normalise/patchify rules (transformers' PIL   |
|                  | image processor named in preprocessor_config.json)                   |
| mrope            | (temporal, height, width) rotary positions of a prompt with images   |
| inputs           | what an image request carries: image spans, pixels, positions, keys  |
| prompt_builder   | prompt ids + images -> expanded ids, image spans, positions and the  |
|                  | prefix-cache key (image tokens replaced by ids from the image hash); |
|                  | preprocessed pixels kept by image hash (house-ocr: encoder features) |
| encoder_cache    | bounded LRU of vision-encoder outputs keyed by image hash            |
| batch_inputs     | per step: M-RoPE positions and image embeddings for each chunk       |

Requests carry pixels, not file names or URLs: the HTTP layer turns a data:
URL into bytes; nothing here opens a path or the network.
"""
