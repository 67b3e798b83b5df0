"""The built manual works with no network, its search finds every endpoint, and it cites no
document a user does not have.

The site is built once (`mkdocs build --strict`, as `bin/docs` serves it) and read as a browser
would: every HTML page for what it loads by itself (scripts, stylesheets, fonts, images, frames;
a link the reader clicks is not loaded), every stylesheet for `url()` and `@import`, every script
for the addresses it would fetch. The search test tokenises `search/search_index.json` as the
theme's search does (tags and the configured separator split words; a query term matches as a
prefix). `test_mermaid_draws_offline_in_chromium` opens the concepts page in headless Chromium
with every host but the local server unresolvable and reads the diagram's SVG.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from functools import partial
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}
LOADED_BY_TAG = {"script": ("src",), "img": ("src", "srcset"), "iframe": ("src",), "frame": ("src",),
                 "embed": ("src",), "source": ("src", "srcset"), "audio": ("src",),
                 "video": ("src", "poster"), "track": ("src",), "object": ("data",), "input": ("src",)}
"""Attributes a browser fetches by itself when it reads the tag."""
LOADED_LINKS = {"stylesheet", "preload", "modulepreload", "prefetch", "preconnect", "dns-prefetch",
                "icon", "apple-touch-icon", "mask-icon", "manifest"}
"""`<link rel=…>` kinds a browser fetches (or connects to) by itself; `canonical` and the like it
does not."""
CSS_LOADS = re.compile(r"""(?:url\(\s*|@import\s+)["']?((?:https?:)?//[^"')\s;]+)""", re.IGNORECASE)
SCRIPT_URL = re.compile(r"""["'`](https?://[^"'`\s]+)["'`]""")
CDN_HOSTS = {"unpkg.com", "cdn.jsdelivr.net", "cdnjs.cloudflare.com", "fonts.googleapis.com",
             "fonts.gstatic.com", "esm.sh", "ajax.googleapis.com", "polyfill.io", "kit.fontawesome.com"}
RESOURCE = re.compile(r"\.(m?js|css|woff2?|ttf|otf|eot)(\?.*)?$")
MERMAID_SCRIPT = "vendor/mermaid/mermaid.tiny.js"
THEME_FALLBACKS = {
    "https://unpkg.com/mermaid@11/dist/mermaid.min.js":
        "the theme fetches Mermaid only when the page defines no global `mermaid`",
    "https://unpkg.com/resize-observer-polyfill":
        "the theme fetches it only in a browser without ResizeObserver (none since 2020)",
}
"""Addresses in the theme's script that a page of this site never fetches, and why; the test
checks the condition of the first (each diagram page loads the vendored Mermaid first)."""


def is_remote(url: str) -> bool:
    parts = urlsplit(html.unescape(url.strip()))
    return (parts.scheme in ("http", "https") or url.strip().startswith("//")) \
        and parts.hostname not in LOCAL_HOSTS


class LoadedResources(HTMLParser):
    """What a page fetches by itself: URLs of loading attributes, inline style and script text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.urls: list[str] = []
        self.inline: list[str] = []
        self.scripts: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        for name in LOADED_BY_TAG.get(tag, ()):
            if name in values:
                self.urls += [part.split()[0] for part in values[name].split(",") if part.split()] \
                    if name == "srcset" else [values[name]]
        if tag == "link" and LOADED_LINKS & set(values.get("rel", "").lower().split()):
            self.urls.append(values.get("href", ""))
        if "style" in values:
            self.inline.append(values["style"])
        if tag == "script" and "src" in values:
            self.scripts.append(values["src"])
        self._in = tag if tag in ("style", "script") else None

    def handle_data(self, data: str) -> None:
        if self._in:
            self.inline.append(data)

    def handle_endtag(self, tag: str) -> None:
        self._in = None


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings_handlers.python")
    out = tmp_path_factory.mktemp("docs") / "site"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                            cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-4000:]
    return out


def pages(site: Path) -> list[Path]:
    found = sorted(site.rglob("*.html"))
    assert len(found) >= 20, "the site was not built"
    return found


def page_text(page: Path) -> str:
    """The words a reader sees (and search indexes): tags, scripts and styles removed."""
    text = re.sub(r"<(script|style)\b.*?</\1>", " ", page.read_text(encoding="utf-8"), flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", text))


@pytest.mark.slow
def test_no_page_loads_anything_from_another_host(site):
    problems = []
    for page in pages(site):
        parser = LoadedResources()
        parser.feed(page.read_text(encoding="utf-8"))
        name = page.relative_to(site)
        problems += [f"{name}: loads {url}" for url in parser.urls if is_remote(url)]
        problems += [f"{name}: inline style or script names {url}" for text in parser.inline
                     for url in re.findall(r"(?:https?:)?//[\w.-]+\.[a-z]{2,}[^\s\"')]*", text)
                     if is_remote(url)]
        text = page.read_text(encoding="utf-8")
        if 'class="mermaid"' in text and not any(src.endswith(MERMAID_SCRIPT) for src in parser.scripts):
            problems.append(f"{name}: draws a diagram without {MERMAID_SCRIPT}: the theme fetches Mermaid")
        if 'data-md-component="source"' in text:
            problems.append(f"{name}: the repository widget fetches its facts from the forge's API")
    for sheet in site.rglob("*.css"):
        problems += [f"{sheet.relative_to(site)}: loads {url}"
                     for url in CSS_LOADS.findall(sheet.read_text(encoding="utf-8")) if is_remote(url)]
    for script in site.rglob("*.js"):
        for url in SCRIPT_URL.findall(script.read_text(encoding="utf-8", errors="replace")):
            parts = urlsplit(url)
            if (parts.hostname in CDN_HOSTS or RESOURCE.search(parts.path)) and url not in THEME_FALLBACKS:
                problems.append(f"{script.relative_to(site)}: fetches {url}")
    assert problems == []


def test_the_checker_sees_what_the_theme_loads_from_a_network():
    """What the theme writes with its Google Fonts and a CDN Mermaid is caught."""
    page = ('<head><link rel="preconnect" href="https://fonts.gstatic.com" crossorigin>'
            '<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">'
            '<link rel="canonical" href="https://example.org/page/">'
            '<script src="https://unpkg.com/mermaid@11/dist/mermaid.min.js"></script>'
            '<img srcset="/a.png 1x, //cdn.example.org/b.png 2x">'
            '<style>:root{--md-text-font:"Roboto"}</style></head>'
            '<p>See <a href="https://example.org/">a page</a>.</p>')
    parser = LoadedResources()
    parser.feed(page)
    assert [url for url in parser.urls if is_remote(url)] == [
        "https://fonts.gstatic.com", "https://fonts.googleapis.com/css?family=Roboto",
        "https://unpkg.com/mermaid@11/dist/mermaid.min.js", "//cdn.example.org/b.png"]
    assert CSS_LOADS.findall('@import url("https://fonts.googleapis.com/x.css");'
                             'a{background:url(data:image/svg+xml;charset=utf-8,<svg xmlns="http://www.w3.org/2000/svg"/>)}'
                             "b{background:url('/local.png')}") == ["https://fonts.googleapis.com/x.css"]


def search_tokens(text: str, separator: re.Pattern[str]) -> set[str]:
    """The index terms of a document's title or text, split as the theme's search splits them:
    at every tag, then at the configured separator, lower-cased."""
    words = set()
    for segment in re.split(r"<[^>]*>", text):
        words.update(word.lower() for word in separator.split(segment) if word)
    return words


def search_index(site: Path) -> tuple[re.Pattern[str], list[dict]]:
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    return re.compile(index["config"]["separator"]), index["docs"]


def finds(word: str, docs: list[dict], separator: re.Pattern[str]) -> set[str]:
    """The pages a search for `word` lists (a term matches as a prefix, as the theme asks lunr)."""
    return {doc["location"].split("#")[0] for doc in docs
            if any(token.startswith(word.lower())
                   for token in search_tokens(doc["title"] + " " + doc["text"], separator))}


def endpoint_words() -> dict[str, str]:
    """Each HTTP path the server's app serves, by its last word (a `{parameter}` is no word)."""
    pytest.importorskip("fastapi")
    from imad.serve import ServeSettings, create_app
    from imad.serve.routes.guard import served_routes
    from tests.support.serving import echo_factory

    app = create_app(ServeSettings(scoring_processes=0), echo_factory())
    try:
        paths = {route.path for route in served_routes(app.routes) if getattr(route, "methods", None)}
    finally:
        app.state.runner.close()
    assert len(paths) >= 7
    return {path: [part for part in path.split("/") if part and not part.startswith("{")][-1]
            for path in sorted(paths)}


@pytest.mark.slow
def test_search_finds_every_endpoint_by_its_last_word(site):
    separator, docs = search_index(site)
    missing = {path: word for path, word in endpoint_words().items()
               if "reference/http-api/" not in finds(word, docs, separator)}
    assert missing == {}
    assert {"reference/http-api/", "how-to/prove-it/"} <= finds("feedback", docs, separator)


def test_the_search_tokens_split_paths_and_identifiers():
    separator = re.compile(r'[\s\-,:!=\[\]()"`/]+|\.(?!\d)|&[lg]t;|(?!\b)(?=[A-Z][a-z])')
    assert search_tokens("<code>POST /v1/imad/feedback</code> and imad.report", separator) == {
        "post", "v1", "imad", "feedback", "and", "report"}
    assert search_tokens("<code>/v1/imad/feedback</code>", re.compile(r"[\s\-]+")) == {"/v1/imad/feedback"}


@pytest.mark.slow
def test_no_search_result_is_a_bare_signature(site):
    """Every title in the index names something: a word, not a value like `None = None`."""
    _, docs = search_index(site)
    titles = [html.unescape(re.sub(r"<[^>]+>", " ", doc["title"])).strip() for doc in docs]
    assert [title for title in titles if not re.match(r"[\w`(→]", title) or
            re.fullmatch(r"(None|True|False|\d+)( = .*)?", title)] == []


@pytest.mark.slow
def test_no_page_cites_the_design_document(site):
    """The design document is not shipped: no page, docstring or help text cites it."""
    cited = {str(page.relative_to(site)): match.group(0)
             for page in pages(site) if (match := re.search(r".{0,60}\bSPEC\b.{0,20}", page_text(page)))}
    assert cited == {}


PROBE = """<script>
(function () {  // the theme draws a diagram into a closed shadow root: open it, count its SVGs
  var roots = [], attach = Element.prototype.attachShadow;
  Element.prototype.attachShadow = function (init) {
    var root = attach.call(this, Object.assign({}, init, {mode: "open"})); roots.push(root); return root;
  };
  setInterval(function () {
    var probe = document.getElementById("imad-probe") ||
      document.body.appendChild(Object.assign(document.createElement("pre"), {id: "imad-probe"}));
    var drawn = roots.filter(function (r) { return r.querySelector("svg .node"); });
    probe.textContent = "diagrams=" + drawn.length;
  }, 100);
})();
</script>"""


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def page_requests(net_log: Path, origin: str) -> list[str]:
    """The URLs of the requests the page at `origin` started (Chromium's own are left out)."""
    log = json.loads(net_log.read_text(encoding="utf-8"))
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [event["params"]["url"] for event in log["events"]
            if event["type"] == start and event.get("params", {}).get("initiator") == origin]


@pytest.mark.slow
def test_mermaid_draws_offline_in_chromium(site, tmp_path):
    """The concepts page in headless Chromium, no host but the local server resolvable: the
    diagram is drawn as SVG, and every request the page makes goes to the local server."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("needs Chromium to render the page (Debian: apt-get install -y chromium)")
    page = (site / "concepts" / "index.html").read_text(encoding="utf-8")
    probed = page.replace("<head>", "<head>" + PROBE, 1)
    (site / "concepts" / "probe.html").write_text(probed, encoding="utf-8")
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(QuietHandler, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    origin = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        dom = subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
             "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
             f"--log-net-log={tmp_path / 'net.json'}", "--virtual-time-budget=15000", "--dump-dom",
             f"{origin}/concepts/probe.html"], capture_output=True, text=True, timeout=180).stdout
    finally:
        server.shutdown()
        server.server_close()
    assert re.search(r'id="imad-probe">diagrams=(\d+)<', dom).group(1) == "1"
    requests = page_requests(tmp_path / "net.json", origin)
    assert f"{origin}/vendor/mermaid/mermaid.tiny.js" in requests
    assert [url for url in requests if not url.startswith(origin + "/")] == []
