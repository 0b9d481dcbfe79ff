"""The documentation stays true: every command and setting is named in docs/, the README
stays short and its test command is CI's, and what the docs show can run: scrapy command
lines parse with the command's own options, `--help` runs, YAML site configs load with the
project's site loader, and the systemd units start real scrapy commands."""

from __future__ import annotations

import ast
import configparser
import functools
import inspect
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from scrapy.cmdline import ScrapyArgumentParser, _get_commands_dict
from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError
from scrapy.settings import Settings
from scrapy.spiderloader import get_spider_loader

from tests.conftest import scrapy
from zeroarchive.crawl.spider import MODES
from zeroarchive.sites.record import parse_spec
from zeroarchive.storage.archive import close_archives, open_archive

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
README = REPO / "README.md"
MAX_README_LINES = 250
#: Folders whose code may read a ZEROARCHIVE_* environment variable or setting.
CODE = ("zeroarchive", "spiders", "pipelines", "middlewares", "settings", "bench")
#: Commands that take positional arguments, and how many (None: one or more; ANY: zero or
#: more, when an option can stand for them).
ANY = -1
POSITIONAL = {
    "crawl": 1,
    "load_sites": 1,
    "import_warc": None,
    "import_0archive": 1,
    "search": 1,
    "save": None,
    "recheck": ANY,
}


@dataclass(frozen=True)
class Block:
    """A fenced code block of a Markdown file."""

    path: Path
    line: int
    lang: str
    info: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"

    @property
    def title(self) -> str | None:
        found = re.search(r'title="([^"]+)"', self.info)
        return found.group(1) if found else None


def markdown_files() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def code_blocks(path: Path) -> list[Block]:
    blocks = []
    lines = path.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        opening = re.match(r"^(\s*)(```+)(.*)$", lines[index])
        if not opening:
            index += 1
            continue
        indent, fence, info = opening.groups()
        body = []
        index += 1
        while index < len(lines) and lines[index].strip() != fence:
            body.append(lines[index][len(indent) :])
            index += 1
        lang = info.strip().split(" ")[0] if info.strip() else ""
        start = index - len(body)
        blocks.append(Block(path, start, lang, info.strip(), "\n".join(body) + "\n"))
        index += 1
    return blocks


def all_blocks(lang: str) -> list[Block]:
    return [b for p in [*markdown_files(), README] for b in code_blocks(p) if b.lang == lang]


@functools.cache
def docs_text() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in markdown_files())


def named(name: str) -> bool:
    pattern = rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])"
    return re.search(pattern, docs_text()) is not None


# --- Everything is named -------------------------------------------------------------------


def project_commands() -> list[str]:
    return sorted(
        p.stem for p in (REPO / "zeroarchive" / "commands").glob("*.py") if p.stem != "__init__"
    )


def project_settings() -> list[str]:
    tree = ast.parse((REPO / "settings" / "base.py").read_text(encoding="utf-8"))
    names = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        names += [t.id for t in targets if isinstance(t, ast.Name) and t.id.isupper()]
    return sorted(names)


@functools.cache
def environment_variables() -> list[str]:
    """Every ZEROARCHIVE_* name the code spells out as a string (a prefix ends in ``_``)."""
    files = [p for folder in CODE for p in (REPO / folder).rglob("*.py")]
    files += [p for p in (REPO / "tests").glob("*.py") if not p.name.startswith("test_")]
    found = set()
    for path in files:
        source = path.read_text(encoding="utf-8")
        if not re.search(r"[\"']ZEROARCHIVE_", source):
            continue  # parsing every file cost each test process 1.5 s of collection
        for node in ast.walk(ast.parse(source)):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and re.fullmatch(r"ZEROARCHIVE_[A-Z0-9_]+", node.value)
            ):
                found.add(node.value)
    return sorted(found)


def test_the_project_has_what_these_tests_look_for() -> None:
    assert {"crawl", "load_sites", "schedule", "monitor"} <= set(project_commands())
    assert {"ZEROARCHIVE_DB_URL", "BLOOMFILTER_HASHES", "AIRTABLE_TYPE_MAP"} <= set(
        project_settings()
    )
    assert {"ZEROARCHIVE_DB_URL", "ZEROARCHIVE_LOGIN_", "ZEROARCHIVE_FAKE_NOW"} <= set(
        environment_variables()
    )


@pytest.mark.parametrize("command", project_commands())
def test_every_command_is_named_in_the_docs(command: str) -> None:
    assert named(f"scrapy {command}"), f"`scrapy {command}` is not named under docs/"


@pytest.mark.parametrize("setting", project_settings())
def test_every_setting_is_named_in_the_docs(setting: str) -> None:
    assert named(setting), f"{setting} (settings/base.py) is not named under docs/"
    # ...and on the reference page, where a user looks for all of them.
    reference = (DOCS / "reference" / "settings.md").read_text(encoding="utf-8")
    assert f"`{setting}`" in reference, f"{setting} is not on docs/reference/settings.md"


@pytest.mark.parametrize("variable", environment_variables())
def test_every_zeroarchive_environment_variable_is_named_in_the_docs(variable: str) -> None:
    if variable.endswith("_"):  # a prefix: the docs spell the full pattern out
        assert variable in docs_text(), f"{variable}... is not named under docs/"
    else:
        assert named(variable), f"{variable} is not named under docs/"


# --- The README ----------------------------------------------------------------------------


def readme_commands() -> list[str]:
    first = next(b for b in code_blocks(README) if b.lang == "sh")
    return [line for line in first.text.splitlines() if line and not line.startswith("#")]


def test_the_readme_fits_on_a_few_screens() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES


def test_the_readme_test_command_is_what_ci_runs() -> None:
    commands = readme_commands()
    assert len(commands) == 2
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    body = re.search(r"readme_tests\(\) \{\n(.*?)\n\}", ci, re.DOTALL)
    assert body is not None, ".ci/run has no readme_tests function"
    assert body.group(1).strip() == commands[1]
    assert "mkdocs build --strict" in commands[1]


def test_getting_started_shows_the_readme_commands() -> None:
    page = next(b for b in code_blocks(DOCS / "getting-started.md") if b.lang == "sh")
    shown = [line for line in page.text.splitlines() if line and not line.startswith("#")]
    assert shown == readme_commands()


def test_every_code_block_is_closed_and_says_its_language() -> None:
    """A fence left open (or doubled) swallows the page after it; a language lets the site
    highlight the block, and the tests here find the blocks they check."""
    for path in [*markdown_files(), README]:
        for block in code_blocks(path):
            assert block.lang, f"{block.where}: a code block without a language"
            assert not re.search(r"^\s*```", block.text, re.MULTILINE), f"{block.where}: fence"


def test_readme_links_go_to_pages_that_exist() -> None:
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text(encoding="utf-8"))
    assert links
    missing = [link for link in links if "://" not in link and not (REPO / link).exists()]
    assert missing == []


def test_every_file_the_docs_name_exists() -> None:
    """`zeroarchive/crawl/blocks.py`, `bench/due_work.py`, `tests/fixtures/`: files and
    folders the docs send readers to (placeholders such as `<name>` aside)."""
    text = docs_text() + README.read_text(encoding="utf-8")
    roots = "zeroarchive|tests|bench|spiders|pipelines|middlewares|settings|docs|\\.ci"
    paths = set(re.findall(rf"`((?:{roots})/[^`\s<]*(?:\.[a-z]+|/))`", text))
    assert len(paths) > 20
    assert sorted(p for p in paths if not (REPO / p).exists()) == []


# --- Shell commands ------------------------------------------------------------------------


def new_project_settings() -> Settings:
    """The project's settings, a new object (a command's options change it): made anew in
    0.4 ms, where a copy of the cached one (a deep copy) took 2 ms, for each of 160 lines."""
    settings = Settings()
    settings.setmodule("settings.base", priority="project")
    return settings


@functools.cache
def project_settings_object() -> Settings:
    return new_project_settings()


@functools.cache
def spider_names() -> frozenset[str]:
    return frozenset(get_spider_loader(project_settings_object()).list())


def spider_arguments(spider: str) -> set[str]:
    """The keyword arguments a spider's ``__init__`` (and its bases') take."""
    cls = get_spider_loader(project_settings_object()).load(spider)
    names: set[str] = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None or klass.__module__.startswith("scrapy"):
            continue
        for parameter in inspect.signature(init).parameters.values():
            if parameter.kind is inspect.Parameter.KEYWORD_ONLY:
                names.add(parameter.name)
    return names


@functools.cache
def scrapy_commands() -> dict[str, ScrapyCommand]:
    return dict(_get_commands_dict(project_settings_object().copy(), True))


def scrapy_problems(argv: list[str]) -> list[str]:
    """Why ``scrapy *argv`` would not be accepted, without running it (empty: fine)."""
    settings = new_project_settings()
    commands = scrapy_commands()
    name, rest = argv[0], argv[1:]
    if name not in commands:
        return [f"no scrapy command {name!r}"]
    command = commands[name]
    command.settings = settings
    parser = ScrapyArgumentParser(conflict_handler="resolve")
    command.add_options(parser)
    try:
        opts, args = parser.parse_known_args(rest)
        command.process_options(args, opts)
    except (SystemExit, UsageError) as exc:
        return [f"scrapy {name}: options refused: {exc}"]
    problems = [f"unknown option {a!r}" for a in args if a.startswith("-")]
    wanted = POSITIONAL.get(name, 0)
    count = len([a for a in args if not a.startswith("-")])
    if wanted == ANY:
        pass
    elif (wanted is None and count == 0) or (wanted is not None and count != wanted):
        problems.append(f"scrapy {name}: {count} positional arguments")
    if name == "crawl" and args:
        spider = args[0]
        if spider not in spider_names() and spider != "%i":
            problems.append(f"no spider {spider!r}")
        # A systemd template's %i: every spider it may be instantiated with.
        for each in sorted(spider_names()) if spider == "%i" else [spider]:
            if each not in spider_names():
                continue
            unknown = set(opts.spargs) - spider_arguments(each)
            problems += [f"spider {each} takes no -a {key}" for key in sorted(unknown)]
        if opts.spargs.get("mode", "all") not in MODES:
            problems.append(f"bad mode {opts.spargs['mode']!r}")
    return problems


def scrapy_lines(block: Block) -> list[list[str]]:
    """The scrapy invocations of a shell block, each as its arguments after ``scrapy``."""
    found = []
    # A line ending in a backslash goes on on the next one.
    for line in block.text.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words = list(lexer)
        command: list[str] = []
        for word in [*words, ";"]:
            if word in (";", "&&", "||", "|", "&"):
                while command and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", command[0]):
                    command.pop(0)  # VAR=value before the command
                if command and command[0].endswith("scrapy") and len(command) > 1:
                    found.append(command[1:])
                command = []
            else:
                command.append(word)
    return found


def shell_invocations() -> list[Any]:
    return [
        pytest.param(argv, id=f"{block.where}:{' '.join(argv)[:60]}")
        for block in all_blocks("sh")
        for argv in scrapy_lines(block)
        if "--help" not in argv
    ]


def test_the_docs_show_scrapy_commands() -> None:
    assert len(shell_invocations()) > 40


@pytest.mark.parametrize("argv", shell_invocations())
def test_every_scrapy_command_line_in_the_docs_is_accepted(argv: list[str]) -> None:
    assert scrapy_problems(argv) == []


def test_the_command_line_check_refuses_what_scrapy_refuses() -> None:
    assert scrapy_problems(["crawl", "generic", "-a", "site=3"]) == []
    assert scrapy_problems(["schedule", "--intervall", "30"]) != []
    assert scrapy_problems(["export_snapshots", "--format", "xml", "--out", "x"]) != []
    assert scrapy_problems(["crawl", "nosuch"]) != []
    assert scrapy_problems(["crawl", "ptt", "-a", "article=x"]) != []
    assert scrapy_problems(["crawl", "generic", "-a", "mode=everything"]) != []
    assert scrapy_problems(["sites", "extra"]) != []
    assert scrapy_problems(["nosuch"]) != []


def help_commands() -> list[str]:
    return sorted(set(re.findall(r"scrapy ([a-z0-9_]+) --help", docs_text())))


def test_every_command_has_its_help_shown_in_the_docs() -> None:
    assert set(project_commands()) <= set(help_commands())


def help_output(command: str) -> tuple[int, str, str]:
    """`scrapy COMMAND --help` from the project, forked from the test process's warm
    interpreter (tests/forked_cli.py), about 0.05 CPU s a command. One new interpreter
    for every help cost 1.35 CPU s in each pytest-xdist process that ran one of these
    cases (five of them in a run, ~6.9 CPU s; forked, ~1.4 for the 26)."""
    done = scrapy(command, "--help", db_url="sqlite://", cwd=REPO, timeout=120)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("command", help_commands())
def test_every_help_named_in_the_docs_runs(command: str) -> None:
    code, text, errors = help_output(command)
    assert code == 0, text + errors
    assert f"scrapy {command}" in text
    assert "Options" in text
    # Scrapy's help formatter takes a wrapped line that ends in ":" for a heading and
    # title-cases it ("The Publications Of This ... (Default" over a line of "="s).
    headings = re.findall(r"^(.*)\n[=-]{3,}$", text, re.MULTILINE)
    assert set(headings) <= {"Usage", "Options", "Global Options"}, headings


# --- Site configs --------------------------------------------------------------------------


def yaml_blocks() -> list[Any]:
    return [pytest.param(block, id=block.where) for block in all_blocks("yaml")]


@pytest.mark.parametrize("block", yaml_blocks())
def test_every_yaml_site_config_in_the_docs_loads(block: Block) -> None:
    data = yaml.safe_load(block.text)
    if isinstance(data, dict) and set(data) == {"config"}:
        # A fragment: the config of a generic site.
        config = {"article": r"/news/\d+", **data["config"]}
        data = [{"name": "fragment", "url": "https://news.example/", "config": config}]
    if isinstance(data, dict) and "sites" in data:
        data = data["sites"]
    assert isinstance(data, list) and data, f"{block.where}: neither sites nor a config"
    for entry in data:
        parse_spec(entry)  # raises SiteConfigError naming the site and field


def test_a_bad_site_config_would_be_caught() -> None:
    from zeroarchive.sites.record import SiteConfigError

    with pytest.raises(SiteConfigError):
        parse_spec({"name": "x", "url": "https://news.example/", "config": {"depth": "many"}})


# --- systemd units -------------------------------------------------------------------------


def unit_blocks() -> list[Block]:
    return [
        b
        for b in code_blocks(DOCS / "operators" / "services.md")
        if b.title and b.title.endswith((".service", ".timer"))
    ]


def read_unit(block: Block) -> configparser.ConfigParser:
    unit = configparser.ConfigParser(strict=False, interpolation=None, delimiters=("=",))
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read_string(block.text)
    return unit


def test_the_services_page_has_units_for_scheduler_workers_and_monitor() -> None:
    titles = {b.title for b in unit_blocks()}
    assert {
        "zeroarchive-schedule.service",
        "zeroarchive-worker@.service",
        "zeroarchive-monitor.service",
        "scrapyd.service",
    } <= titles
    for block in unit_blocks():
        if block.title and block.title.endswith(".timer"):
            assert block.title.replace(".timer", ".service") in titles


@pytest.mark.parametrize("block", unit_blocks(), ids=lambda b: b.title)
def test_every_unit_runs_real_scrapy_commands(block: Block) -> None:
    unit = read_unit(block)
    assert "Unit" in unit and unit["Unit"].get("Description")
    if block.title and block.title.endswith(".timer"):
        assert unit["Timer"].get("OnCalendar")
        return
    service = unit["Service"]
    assert service.get("ExecStart"), f"{block.title} has no ExecStart"
    for key in ("ExecStartPre", "ExecStart"):
        if key not in service:
            continue
        argv = shlex.split(service[key])
        program = Path(argv[0]).name
        if program == "scrapyd":
            assert shutil.which("scrapyd"), "scrapyd is not installed"
            continue
        assert program == "scrapy", f"{block.title}: {key} runs {argv[0]}, not scrapy"
        assert service.get("WorkingDirectory"), "scrapy needs the checkout (scrapy.cfg)"
        assert scrapy_problems(argv[1:]) == []


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze")
def test_systemd_accepts_every_unit(tmp_path: Path) -> None:
    """systemd's own check, with the programs where this machine has them."""
    scrapy = shutil.which("scrapy")
    assert scrapy is not None
    paths = []
    for block in unit_blocks():
        assert block.title is not None
        text = block.text.replace("/srv/zeroarchive/venv/bin/", f"{Path(scrapy).parent}/")
        name = block.title.replace("@.", "@generic.")
        (tmp_path / name).write_text(text)
        paths.append(str(tmp_path / name))
    done = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", *paths],
        capture_output=True,
        text=True,
        timeout=120,
    )
    complaints = [line for line in done.stderr.splitlines() if str(tmp_path) in line]
    assert done.returncode == 0 and complaints == [], done.stderr


def test_the_scrapyd_conf_in_the_docs_is_locked_down() -> None:
    """An open scrapyd runs anyone's egg: the documented one binds a private address and
    turns basic auth on (scrapyd 1.6 does only when both username and password are set)."""
    blocks = [b for b in code_blocks(DOCS / "operators" / "workers.md") if b.lang == "ini"]
    assert len(blocks) == 1
    conf = configparser.ConfigParser(interpolation=None)
    conf.read_string(blocks[0].text)
    scrapyd = conf["scrapyd"]
    assert scrapyd.get("username") and scrapyd.get("password")
    assert scrapyd["bind_address"] not in ("0.0.0.0", "::", "")
    assert scrapyd.getint("http_port") == 6800


# --- Documented procedures -----------------------------------------------------------------


def test_a_month_rotated_as_warc_comes_back_with_import_warc(
    migrated_mariadb_url: str, tmp_path: Path
) -> None:
    """docs/operators/rotation.md, "Getting a month back": rotate with --format warc, then
    import_warc the month's files; every snapshot is back with its bytes' hash. On MariaDB,
    where the month's partition was exchanged and dropped (SQLite only deletes rows)."""
    db_url = migrated_mariadb_url
    from sqlalchemy import create_engine

    from tests.conftest import scrapy
    from tests.test_rotate_snapshots import fill

    page = (DOCS / "operators" / "rotation.md").read_text(encoding="utf-8")
    assert "scrapy import_warc /backup/snapshots-2025-01/*.warc.gz --site cna" in page
    fill(db_url)  # a site named "s" with snapshots in January, February and March 2025
    close_archives()
    engine = create_engine(db_url)

    def snapshots() -> list[tuple[Any, ...]]:
        with engine.connect() as conn:
            query = "SELECT article_id, snapshot_at, content_hash FROM ArticleSnapshot"
            return sorted(tuple(row) for row in conn.exec_driver_sql(query))

    before = snapshots()
    out = tmp_path / "backup"
    rotated = scrapy(
        "rotate_snapshots", "--before", "2025-02", "--export", str(out), "--format", "warc",
        db_url=db_url, cwd=tmp_path,
    )  # fmt: skip
    assert rotated.returncode == 0, rotated.stderr
    assert len(snapshots()) < len(before)
    files = sorted(str(p) for p in (out / "snapshots-2025-01").glob("*.warc.gz"))
    assert files
    imported = scrapy("import_warc", *files, "--site", "s", db_url=db_url, cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert snapshots() == before
    engine.dispose()


def backup_block(heading: str) -> list[str]:
    """The shell lines under a heading of docs/operators/backups.md."""
    page = DOCS / "operators" / "backups.md"
    text = page.read_text(encoding="utf-8")
    section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", section, re.DOTALL):
        lines += [line for line in block.splitlines() if line and not line.startswith("#")]
    return lines


@pytest.mark.skipif(shutil.which("sqlite3") is None, reason="no sqlite3 command")
def test_the_sqlite_backup_commands_make_a_sound_copy(tmp_path: Path) -> None:
    open_archive(url=f"sqlite:///{tmp_path / 'zeroarchive.db'}")
    close_archives()
    lines = backup_block("SQLite")
    assert len(lines) == 3
    done = subprocess.run(
        ["bash", "-euc", "\n".join(lines)], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
    (copy,) = (tmp_path / "backup").glob("zeroarchive-*.db")
    with sqlite3.connect(copy) as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert {"Site", "Article", "ArticleSnapshot"} <= tables


@pytest.mark.skipif(
    not all(shutil.which(c) for c in ("mariadb-dump", "mariadb", "zstd")),
    reason="no mariadb-dump, mariadb or zstd command",
)
def test_the_mariadb_dump_restores_tables_triggers_and_partitions(
    migrated_mariadb_url: str, tmp_path: Path
) -> None:
    """The dump and restore of docs/operators/backups.md, pointed at the test server."""
    from sqlalchemy import create_engine

    open_archive(url=migrated_mariadb_url)
    close_archives()
    source = migrated_mariadb_url.rsplit("/", 1)[1]
    restored = f"{source}_restored"
    server = create_engine(migrated_mariadb_url)
    # The commands as the page has them; the server from an option file the clients read.
    url = server.url
    (tmp_path / "my.cnf").write_text(
        f"[client]\nhost={url.host}\nport={url.port or 3306}\nuser={url.username}\n"
        + (f"password={url.password}\n" if url.password else "")
    )
    lines = backup_block("MariaDB")
    assert len(lines) == 4 and lines[-1] == "scrapy migrate"
    dump, create, load = lines[:3]
    script = "\n".join(
        [
            dump.replace(" zeroarchive |", f" {source} |"),
            create.replace("DATABASE zeroarchive ", f"DATABASE {restored} "),
            load.replace("2025-01-10", "$(date +%F)").replace(
                "| mariadb zeroarchive", f"| mariadb {restored}"
            ),
        ]
    )
    try:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=tmp_path,
            env={**os.environ, "MYSQL_HOME": str(tmp_path)},
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        with server.connect() as conn:
            triggers = conn.exec_driver_sql(
                "SELECT count(*) FROM information_schema.triggers WHERE trigger_schema = %s",
                (restored,),
            ).scalar_one()
            partitioned = conn.exec_driver_sql(
                "SELECT count(*) FROM information_schema.partitions WHERE table_schema = %s"
                " AND table_name = 'ArticleSnapshot' AND partition_name IS NOT NULL",
                (restored,),
            ).scalar_one()
            expected = conn.exec_driver_sql(
                "SELECT count(*) FROM information_schema.triggers WHERE trigger_schema = %s",
                (source,),
            ).scalar_one()
        assert triggers == expected > 0
        assert partitioned > 0
    finally:
        with server.begin() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS `{restored}`")
        server.dispose()
