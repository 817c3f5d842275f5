"""ocrserve front end: REST API, CLI entry point. Never imports torch."""
