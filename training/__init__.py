"""Training code for the models ocrserve ships (see training/house_ocr)."""
