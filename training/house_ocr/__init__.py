"""The house OCR model: data generation, training and export.

`charset.py` is the vocabulary, `fonts.py` the Debian fonts split into training
and held-out sets, `corpus.py` the text sources, `render.py` typesets and ages
text-line crops, `make_data.py` turns them into frozen-encoder features,
`model.py` is the trainable model (also the plain PyTorch reference the engine
is tested against), `train.py` trains it and `export.py` writes the shipped
files under `models/house-ocr/`.
"""
