"""`python -m engine.server ...` is `ocrserve engine ...`."""
from __future__ import annotations

import sys

from engine.server.main import main

sys.exit(main())
