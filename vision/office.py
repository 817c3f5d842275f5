"""Office, HTML and EPUB documents turned into the PDF the pipeline reads, by a converter that
runs as a child process under a budget and, for LibreOffice, in a sandbox.

| kind                                 | converter                                                   |
|--------------------------------------|-------------------------------------------------------------|
| DOCX, ODT, RTF, PPTX, ODP, XLSX, ODS | LibreOffice (Debian's `-nogui` packages), headless, in bubblewrap |
| HTML, EPUB                           | MuPDF's own HTML engine (PyMuPDF, `vision/reflow_pdf.py`)   |

HTML goes to MuPDF because LibreOffice's HTML import fetches every `<img>` URL (remote and
`file://`) and loses headings; MuPDF reads HTML from a stream, with no network code and no
file access: an image that is not inline (`data:`) or inside the EPUB is left out. LibreOffice
7.4 cannot import EPUB at all.

What a hostile document cannot do in LibreOffice, and what stops it:

| attack                                  | stopped by                                                |
|-----------------------------------------|-----------------------------------------------------------|
| fetch a URL (linked image, OLE link)    | bubblewrap: a network namespace with no interface but lo  |
| embed a server file (`file:///etc/...`) | bubblewrap: only /usr, fonts and the work folder are visible |
| run a macro                             | the throw-away profile: macro security "very high", macro execution off |
| run for ever, eat memory, write a huge PDF | `conversion_timeout_s` (the whole process tree killed), `conversion_memory_bytes` (RLIMIT_AS), `max_converted_bytes` (RLIMIT_FSIZE) |
| be a ZIP bomb                           | vision/packages.py, before the converter starts           |

Without a working bubblewrap (`bwrap`) this server refuses LibreOffice's kinds instead of
converting them unsandboxed. At most `MAX_CONVERSIONS_AT_ONCE` conversions run per process.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from functools import cache
from pathlib import Path

from vision.formats import DocumentKind
from vision.limits import ConversionFailedError, UnsupportedFormatError, VisionLimits

MAX_CONVERSIONS_AT_ONCE = 2
# Tools are looked up here only, never on the service's PATH, and run by their full path.
SYSTEM_PATH = "/usr/bin:/bin:/usr/local/bin"
# LibreOffice's import filter for each kind: named, so its type detection cannot pick another one.
_LIBREOFFICE_FILTERS = {
    DocumentKind.DOCX: "MS Word 2007 XML", DocumentKind.ODT: "writer8", DocumentKind.RTF: "Rich Text Format",
    DocumentKind.PPTX: "Impress MS PowerPoint 2007 XML", DocumentKind.ODP: "impress8",
    DocumentKind.XLSX: "Calc MS Excel 2007 XML", DocumentKind.ODS: "calc8",
}
_MUPDF_KINDS = (DocumentKind.HTML, DocumentKind.EPUB)
# The throw-away profile's settings. The proxy names a closed local port: a second lock on the
# network door, should the sandbox ever be configured away.
_PROFILE_SETTINGS = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema">
{}
</oor:items>
"""
_SETTINGS = (
    ("/org.openoffice.Office.Common/Security/Scripting", "MacroSecurityLevel", "3"),
    ("/org.openoffice.Office.Common/Security/Scripting", "DisableMacrosExecution", "true"),
    ("/org.openoffice.Office.Common/Security/Scripting", "BlockUntrustedRefererLinks", "true"),
    ("/org.openoffice.Inet/Settings", "ooInetProxyType", "1"),
    ("/org.openoffice.Inet/Settings", "ooInetHTTPProxyName", "127.0.0.1"),
    ("/org.openoffice.Inet/Settings", "ooInetHTTPProxyPort", "9"),
    ("/org.openoffice.Inet/Settings", "ooInetHTTPSProxyName", "127.0.0.1"),
    ("/org.openoffice.Inet/Settings", "ooInetHTTPSProxyPort", "9"),
)
_slots = threading.BoundedSemaphore(MAX_CONVERSIONS_AT_ONCE)


def convert_to_pdf(source: Path, kind: DocumentKind, work_parent: Path, limits: VisionLimits) -> Path:
    """The PDF made from `source` (already sniffed as `kind`, its package checked), as a new file
    in `work_parent` that the caller owns. Raises `ConversionFailedError` (the document could not
    be converted within its budget) or `UnsupportedFormatError` (this server has no converter)."""
    assert kind.is_converted
    work = Path(tempfile.mkdtemp(dir=work_parent, prefix="convert-"))
    try:
        (work / "out").mkdir()
        if kind in _MUPDF_KINDS:
            command = [sys.executable, "-m", "vision.reflow_pdf", kind.value, str(source), str(work / "out" / "in.pdf"),
                       str(limits.max_pages)]
            env = {"PATH": SYSTEM_PATH, "LANG": "C.UTF-8", "HOME": str(work)}
        else:
            command, env = _libreoffice_command(source, kind, work)
        with _slots:
            _run(command, env, limits, kind)
        made = work / "out" / "in.pdf"
        if not made.is_file() or made.stat().st_size == 0:
            raise ConversionFailedError(f"the {kind.value.upper()} document could not be converted to PDF "
                                        "(it may be damaged or empty)")
        fd, pdf = tempfile.mkstemp(dir=work_parent, prefix="converted-", suffix=".pdf")
        os.close(fd)
        os.replace(made, pdf)
        return Path(pdf)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _libreoffice_command(source: Path, kind: DocumentKind, work: Path) -> tuple[list[str], dict[str, str]]:
    soffice = shutil.which("soffice", path=SYSTEM_PATH)
    if soffice is None or not sandbox_works():
        raise UnsupportedFormatError(f"this server cannot read {kind.value.upper()} documents (LibreOffice or its "
                                     "sandbox, bubblewrap, is not installed or cannot run here); send a PDF")
    shutil.copyfile(source, work / f"in.{kind.value}")
    profile = work / "profile" / "user"
    profile.mkdir(parents=True)
    items = "\n".join(f'<item oor:path="{path}"><prop oor:name="{name}" oor:op="fuse"><value>{value}</value></prop>'
                      f"</item>" for path, name, value in _SETTINGS)
    (profile / "registrymodifications.xcu").write_text(_PROFILE_SETTINGS.format(items))
    # Inside the sandbox the work folder is /work, and nothing of this host but /usr, fonts and
    # LibreOffice's own configuration is there.
    inner = [soffice, "-env:UserInstallation=file:///work/profile", "--headless", "--norestore", "--nolockcheck",
             "--nodefault", "--nologo", f"--infilter={_LIBREOFFICE_FILTERS[kind]}", "--convert-to", "pdf",
             "--outdir", "/work/out", f"/work/in.{kind.value}"]
    return _bwrap_prefix(work) + inner, {}


def _bwrap_prefix(work: Path) -> list[str]:
    prefix = [shutil.which("bwrap", path=SYSTEM_PATH) or "bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--clearenv",
              "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", "/work", "--setenv", "LANG", "C.UTF-8",
              "--ro-bind", "/usr", "/usr", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for top in ("/bin", "/lib", "/lib64", "/sbin"):   # merged-/usr systems link these; older ones have folders
        if os.path.islink(top):
            prefix += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            prefix += ["--ro-bind", top, top]
    for shared in ("/etc/fonts", "/etc/libreoffice", "/etc/ld.so.cache", "/var/cache/fontconfig"):
        prefix += ["--ro-bind-try", shared, shared]
    return prefix + ["--bind", str(work), "/work", "--chdir", "/work"]


@cache
def sandbox_works() -> bool:
    """Whether bubblewrap can make its namespaces here (not, say, under a seccomp policy that
    forbids user namespaces); asked once per process."""
    if shutil.which("bwrap", path=SYSTEM_PATH) is None:
        return False
    with tempfile.TemporaryDirectory() as work:
        try:
            done = subprocess.run(_bwrap_prefix(Path(work)) + ["/usr/bin/true"], capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return False
    return done.returncode == 0


def _run(command: list[str], env: dict[str, str], limits: VisionLimits, kind: DocumentKind) -> None:
    """The converter under its budget; its whole process group is killed past the time limit."""
    budget = [shutil.which("prlimit", path=SYSTEM_PATH) or "prlimit", f"--as={limits.conversion_memory_bytes}", f"--fsize={limits.max_converted_bytes}", "--"]
    process = subprocess.Popen(budget + command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, start_new_session=True)
    try:
        _, stderr = process.communicate(timeout=limits.conversion_timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise ConversionFailedError(f"converting the {kind.value.upper()} document to PDF took longer than "
                                    f"{limits.conversion_timeout_s:g} s; it was stopped") from None
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    if process.returncode != 0:
        reason = stderr.decode("utf-8", "replace").strip().splitlines()[-1:] if stderr else []
        detail = f": {reason[0][:200]}" if reason and kind in _MUPDF_KINDS else ""
        raise ConversionFailedError(f"the {kind.value.upper()} document could not be converted to PDF{detail}")
