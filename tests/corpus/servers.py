"""The failure corpus's servers: real, unmodified MCP servers, each installed as its README says, pinned.

Each ``CorpusServer`` says what kind of server it is, which package and version, whether the default catalog's rules
were written with its texts in view (``tuned``; the others are the proof that the rules hold beyond the servers they
were written for), and how to start it over stdio in a scratch folder (``launch``: it sets up what the server works
on there, a repository, a database, files, and returns the command). npm packages go into the shared
``var/upstreams/node_modules`` and run with the machine's Node (``npm_program``); PyPI packages each get a virtual
environment of their own, as ``uvx`` gives them (``pypi_program``; mcp-server-sqlite and mcp-text-editor are held to
``mcp<2``, which their own loose bounds ``mcp>=1.6`` and ``mcp>=1.1.2`` would let in and which they do not start
with). The database servers work on the machine's PostgreSQL and MariaDB, each launch in a new database named
``corpus_<random>``, dropped when the run ends; the cache servers each on a ``redis-server`` of their own, started
for the launch and stopped when the run ends; the SQLite, DuckDB, Excel and libSQL memory servers on a file made in
their scratch folder, the notes server (basic-memory) on a folder of notes there, with its index and config beside it,
and the document converter (markitdown-mcp) on files there. The search and web servers have no internet here: their
searches and fetches fail as they do on a machine cut off from it. The queue server (mqtt5-mcp-server) works on a
``mosquitto`` broker of its own, started and stopped as the cache servers' ``redis-server`` is; redis-client-mcp-py
is held to ``mcp<2`` too (its bound is ``mcp>=1.0.0``; it imports the FastMCP that mcp 2 renamed), and so is git-mcp
(it asks for ``fastmcp`` but imports the SDK's FastMCP). The command server (mcp-shell-server) runs only the file
commands it is allowed (``ALLOW_COMMANDS``), in a folder of files in its scratch folder; the maths servers need nothing.
The SQLAlchemy server (mcp-alchemy) works on a MariaDB database of the corpus's own through PyMySQL, installed beside
it as its README has it; the PDF reader may read only a folder of PDFs in its scratch folder (``--allow-dir``); the
ESLint server lints a project folder there (with its ``eslint.config.js``) and one without a config; the queue
server (bullmq-mcp) works on a ``redis-server`` of its own, as the cache servers do; the OpenAPI server on a small
pet API whose spec is in its scratch folder, served by Python's ``http.server`` of the launch's own (started and
stopped as the brokers are). The Obsidian server refuses a vault under /tmp or /var, so its vault is made in a folder
of its own in ``var/upstreams``, removed when the run ends. The GitHub server runs without a token and, like the Maven
server, has no internet: its API calls fail as they do cut off from it. The Kubernetes server runs the machine's
``kubectl`` on a kubeconfig of its scratch folder whose one cluster (``corpus``) is down (nothing listens at
127.0.0.1:1). The calendar server has OAuth client keys (in its package's folder, as its README's second way has them,
for the run) but no account signed in: no token in its config folder, in its scratch folder. The MongoDB server is
read-only (``--readOnly``, as its README has it), with no connection set up and no MongoDB on the machine, its logs and
exports in its scratch folder; the code runner runs snippets with the machine's interpreters (``node``, ``python``), and
has no others. The arXiv server keeps its papers and watched topics in an empty folder of its scratch folder
(``--storage-path``) and, like the weather server, has no internet. The task tracker (task-master-ai) serves its
standard tools (``TASK_MASTER_TOOLS``) on a project of its scratch folder holding two tasks, with no AI provider's API
key; it, the weather server, the mail server and the vector store have their scratch folder for their home (``HOME``),
where each keeps a folder of its own. The mail server (mcp-email-server) reads a settings file of its scratch folder
(``MCP_EMAIL_SERVER_CONFIG_PATH``, its legacy TOML form) with one account, whose IMAP and SMTP servers (127.0.0.1:1)
are down, no recipient allowed and attachment downloads off, its defaults. The vector store (chroma-mcp) is held to
``mcp<2`` (its bound is ``mcp[cli]>=1.2.1``; it imports the FastMCP that mcp 2 renamed), at 0.2.5: 0.2.6 pins
``mcp==1.6.0``, which neither imports with today's pydantic nor survives a request it does not know. It works on a
persistent Chroma in its scratch folder (``--data-dir``) with one collection, seeded by the chromadb of its own
environment, and its default embedding model, which any new text needs, cannot be downloaded. The workflow server
(n8n-mcp) runs as its README sets it up for stdio, its telemetry off, on the node database its package ships, with no
n8n instance. The Word server (office-word-mcp-server) works on documents of its scratch folder, and the tree-sitter
server on a folder of code there, which no case has registered as a project; the second DuckDB server
(mcp-server-duckdb) on a DuckDB file there, read-only; the command server (cli-mcp-server) in a folder of its scratch
folder, with a few commands and flags allowed; the task manager (mcp-shrimp-task-manager) on a data folder there
holding one completed task; the documentation server (context7-mcp) has no API key and no internet. The tree-sitter,
DuckDB and command servers are held to ``mcp<2`` (their bounds let it in; they import what mcp 2 renamed or removed).
"""

from __future__ import annotations

import atexit
import json
import secrets
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tests.mcpserver.gateway.upstreams import (
    UPSTREAMS_DIR,
    everything_server,
    fetch_server,
    filesystem_server,
    git_server,
    npm_package,
    pypi_program,
    time_server,
)

# What a server works on, as the corpus's report groups them.
KINDS = frozenset(
    {"files", "version-control", "web", "database", "cache", "knowledge", "search", "time", "reasoning", "reference",
     "queue", "maths", "dev-tool", "cluster", "calendar", "registry", "science", "tracker", "weather", "messaging",
     "vector-store", "automation"}
)  # fmt: skip


@dataclass(frozen=True)
class StdioLaunch:
    """A server's command line over stdio, and what its environment adds to the machine's."""

    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CorpusServer:
    name: str  # its name behind the gateway (the prefix of its tools) and in the cases
    kind: str  # one of KINDS
    package: str  # "npm <name>" or "PyPI <name>"
    version: str
    tuned: bool  # the default rules were written with this server's failure texts in view
    launch: Callable[[Path], StdioLaunch]  # given an empty scratch folder of its own


def npm_program(package: str, version: str, bin_name: str | None = None) -> list[str]:
    """The command that runs an npm package's program (its ``bin``: the one named ``bin_name``, else its only or
    first one) with the machine's Node, installed (pinned) into the shared ``var/upstreams/node_modules`` once."""
    folder = npm_package(package, version)
    bins = json.loads((folder / "package.json").read_text())["bin"]
    entry = bins if isinstance(bins, str) else bins[bin_name or next(iter(bins))]
    return [shutil.which("node") or "node", str((folder / entry).resolve())]


def git_in(folder: Path, *args: str) -> None:
    """``git`` in ``folder`` with a fixed identity (the corpus's repositories are made fresh for each run)."""
    subprocess.run(  # noqa: S603 (fixed git command)
        [shutil.which("git") or "git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=folder, check=True, capture_output=True,
    )  # fmt: skip


def _time(folder: Path) -> StdioLaunch:
    return StdioLaunch(time_server(), ("--local-timezone", "Etc/UTC"))


def _repository(folder: Path) -> Path:
    """``folder/repo``, a repository with one commit of ``a.txt``, beside ``folder/plain``, a folder that is none."""
    repo = folder / "repo"
    repo.mkdir()
    git_in(repo, "init", "--quiet", "--initial-branch=main")
    (repo / "a.txt").write_text("a\n")
    git_in(repo, "add", "a.txt")
    git_in(repo, "commit", "--quiet", "-m", "one")
    (folder / "plain").mkdir()
    return repo


def _git(folder: Path) -> StdioLaunch:
    return StdioLaunch(git_server(), ("--repository", str(_repository(folder))))


def _fetch(folder: Path) -> StdioLaunch:
    return StdioLaunch(fetch_server())


def _filesystem(folder: Path) -> StdioLaunch:
    root = folder / "fsroot"
    root.mkdir()
    (root / "hello.txt").write_text("hello\n")
    node, script = filesystem_server()
    return StdioLaunch(node, (script, str(root)))


def _everything(folder: Path) -> StdioLaunch:
    node, script = everything_server()
    return StdioLaunch(node, (script, "stdio"))


# The machine's services the database and cache servers work on, each launch in a namespace of its own.
POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432"
MARIADB = {"host": "127.0.0.1", "port": "3306", "user": "root"}  # empty password


def _launch(command: list[str], *args: str, env: Mapping[str, str] | None = None) -> StdioLaunch:
    """A launch of ``command`` (a program and its first arguments, as ``npm_program`` gives it) with ``args``."""
    return StdioLaunch(command[0], (*command[1:], *args), env or {})


def _fresh_name() -> str:
    return f"corpus_{secrets.token_hex(6)}"


def _memory(folder: Path) -> StdioLaunch:
    memory = folder / "memory.jsonl"  # one entity to add to, in the server's own line format
    memory.write_text(
        json.dumps({"type": "entity", "name": "Alice", "entityType": "person", "observations": []}) + "\n"
    )
    program = npm_program("@modelcontextprotocol/server-memory", "2026.8.31")
    return _launch(program, env={"MEMORY_FILE_PATH": str(memory)})


def _thinking(folder: Path) -> StdioLaunch:
    program = npm_program("@modelcontextprotocol/server-sequential-thinking", "2026.8.31")
    return _launch(program, env={"DISABLE_THOUGHT_LOGGING": "true"})


def _sqlite(folder: Path) -> StdioLaunch:
    database = folder / "corpus.db"
    with sqlite3.connect(database) as connection:
        connection.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, age INTEGER)")
        connection.execute("INSERT INTO users (name, age) VALUES ('alice', 30), ('bob', 40)")
    connection.close()
    return StdioLaunch(pypi_program("sqlite", "mcp-server-sqlite", "2025.4.25", "mcp-server-sqlite", "mcp<2"),
                       ("--db-path", str(database)))  # fmt: skip


def _psql(*args: str) -> None:
    subprocess.run(  # noqa: S603 (fixed psql command)
        [shutil.which("psql") or "psql", "-h", "127.0.0.1", "-U", "postgres", "-v", "ON_ERROR_STOP=1", "-q", *args],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip


def _postgres_database() -> str:
    """A new PostgreSQL database of the corpus's own with a ``users`` table (alice and bob), dropped when the run ends,
    after its servers have (one still connected is disconnected)."""
    database = _fresh_name()
    _psql("-d", "postgres", "-c", f"CREATE DATABASE {database}")
    atexit.register(_psql, "-d", "postgres", "-c", f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
    _psql("-d", database, "-c", "CREATE TABLE users (id serial PRIMARY KEY, name text NOT NULL UNIQUE, age integer, "
          "created date); INSERT INTO users (name, age, created) VALUES ('alice', 30, '2024-01-01'), "
          "('bob', 40, '2024-02-01')")  # fmt: skip
    return database


def _postgres(folder: Path) -> StdioLaunch:
    program = npm_program("@modelcontextprotocol/server-postgres", "0.6.2")
    return _launch(program, f"{POSTGRES_URL}/{_postgres_database()}")


def _mysql(*args: str) -> None:
    subprocess.run(  # noqa: S603 (fixed mysql command)
        [shutil.which("mysql") or "mysql", "-h", MARIADB["host"], "-P", MARIADB["port"], "-u", MARIADB["user"], *args],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip


def _mariadb_database() -> str:
    """A new MariaDB database of the corpus's own with a ``users`` table (alice and bob), dropped when the run ends."""
    database = _fresh_name()
    _mysql("-e", f"CREATE DATABASE {database}")
    atexit.register(_mysql, "-e", f"DROP DATABASE IF EXISTS {database}")
    _mysql(database, "-e", "CREATE TABLE users (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(50) NOT NULL UNIQUE, "
           "age INT, created DATE); INSERT INTO users (name, age, created) VALUES ('alice', 30, '2024-01-01'), "
           "('bob', 40, '2024-02-01')")  # fmt: skip
    return database


def _mariadb(folder: Path) -> StdioLaunch:
    database = _mariadb_database()
    program = npm_program("@benborla29/mcp-server-mysql", "2.0.9")
    env = {"MYSQL_HOST": MARIADB["host"], "MYSQL_PORT": MARIADB["port"], "MYSQL_USER": MARIADB["user"],
           "MYSQL_PASS": "", "MYSQL_DB": database}  # fmt: skip
    return _launch(program, env=env)


def _own_redis(folder: Path) -> str:
    """The URL of a ``redis-server`` of this launch's own, on a free port, its files in ``folder``, stopped when the
    run ends, with the corpus's keys: a list and a string. The machine's Redis is never touched."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(  # noqa: S603 (the system's redis-server, fixed arguments)
        [shutil.which("redis-server") or "redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(folder)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    atexit.register(process.kill)
    url = f"redis://127.0.0.1:{port}/0"
    cli = [shutil.which("redis-cli") or "redis-cli", "-u", url]
    deadline = time.monotonic() + 10
    while subprocess.run([*cli, "PING"], capture_output=True, check=False).stdout.strip() != b"PONG":  # noqa: S603
        if time.monotonic() > deadline:
            raise RuntimeError(f"redis-server on port {port} did not answer")
        time.sleep(0.1)
    for command in (("RPUSH", "corpus:list", "a", "b"), ("SET", "corpus:string", "hello")):
        subprocess.run([*cli, *command], check=True, capture_output=True, timeout=60)  # noqa: S603 (fixed command)
    return url


def _redis(folder: Path) -> StdioLaunch:
    return _launch(npm_program("@modelcontextprotocol/server-redis", "2025.4.25"), _own_redis(folder))


def _redis_official(folder: Path) -> StdioLaunch:
    program = pypi_program("redis", "redis-mcp-server", "0.5.1", "redis-mcp-server")
    return StdioLaunch(program, ("--url", _own_redis(folder)))


def _git_cyanheads(folder: Path) -> StdioLaunch:
    _repository(folder)  # inside GIT_BASE_DIR, with the folder that is no repository
    env = {"MCP_TRANSPORT_TYPE": "stdio", "MCP_LOG_LEVEL": "error", "GIT_BASE_DIR": str(folder),
           "LOGS_DIR": str(folder / "logs"), "GIT_USERNAME": "t", "GIT_EMAIL": "t@example.invalid",
           "GIT_SIGN_COMMITS": "false"}  # fmt: skip
    return _launch(npm_program("@cyanheads/git-mcp-server", "2.15.3"), env=env)


def _fetch_node(folder: Path) -> StdioLaunch:
    return _launch(npm_program("mcp-fetch-server", "1.1.2", "mcp-fetch-server"))


DUCKDB_SEED = (
    "CREATE TABLE users (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL UNIQUE, age INTEGER, created DATE); "
    "INSERT INTO users VALUES (1, 'alice', 30, DATE '2024-01-01'), (2, 'bob', 40, DATE '2024-02-01')"
)


def _seeded_duckdb(program: str, folder: Path) -> Path:
    """``folder/corpus.duckdb`` holding the corpus's ``users`` table, made by the DuckDB of ``program``'s own
    environment (the file's format is that DuckDB's)."""
    database = folder / "corpus.duckdb"
    subprocess.run(  # noqa: S603 (fixed script)
        [str(Path(program).parent / "python"), "-c", "import duckdb, sys; duckdb.connect(sys.argv[1]).execute("
         "sys.argv[2]).close()", str(database), DUCKDB_SEED],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    return database


def _duckdb(folder: Path) -> StdioLaunch:
    program = pypi_program("motherduck", "mcp-server-motherduck", "1.1.0", "mcp-server-motherduck")
    database = _seeded_duckdb(program, folder)
    return StdioLaunch(program, ("--db-path", str(database)))  # read-only, the server's default for a file


def _text_editor(folder: Path) -> StdioLaunch:
    texts = folder / "texts"  # the server takes any absolute path; the cases name files of this folder
    texts.mkdir()
    (texts / "notes.txt").write_text("one\ntwo\nthree\n")
    (texts / "latin1.txt").write_bytes("café\n".encode("latin-1"))
    return StdioLaunch(pypi_program("texteditor", "mcp-text-editor", "1.0.2", "mcp-text-editor", "mcp<2"))


def _knowledge_graph(folder: Path) -> StdioLaunch:
    memory = folder / "memory.jsonl"  # one entity, as in the server's own line format
    memory.write_text(
        json.dumps({"type": "entity", "name": "Alice", "entityType": "person", "observations": []}) + "\n"
    )
    return _launch(npm_program("@itseasy21/mcp-knowledge-graph", "1.0.7"), "--memory-path", str(memory))


def _dbhub(folder: Path) -> StdioLaunch:
    program = npm_program("@bytebase/dbhub", "1.4.0")
    dsn = f"{POSTGRES_URL}/{_postgres_database()}?sslmode=disable"
    return _launch(program, "--transport", "stdio", "--dsn", dsn)


def _excel(folder: Path) -> StdioLaunch:
    program = pypi_program("excel", "excel-mcp-server", "2.2.2", "excel-mcp-server")
    books = folder / "books"  # the only folder the server may open workbooks in
    books.mkdir()
    subprocess.run(  # noqa: S603 (fixed script) a workbook made by the openpyxl of the server's own environment
        [str(Path(program).parent / "python"), "-c", "import openpyxl, sys; book = openpyxl.Workbook(); "
         "sheet = book.active; sheet.title = 'Data'; [sheet.append(row) for row in "
         "(['name', 'age'], ['alice', 30], ['bob', 40])]; book.save(sys.argv[1])", str(books / "people.xlsx")],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    (books / "plain.xlsx").write_text("not a workbook\n")  # a text file named as a workbook
    return StdioLaunch(program, ("stdio", "--allow-dir", str(books)))


def _basic_memory(folder: Path) -> StdioLaunch:
    notes = folder / "notes"  # the default project "main"; its index and config go to a folder of their own
    (notes / "people").mkdir(parents=True)
    (notes / "people" / "Alice.md").write_text(
        "---\ntitle: Alice\ntype: person\npermalink: people/alice\n---\n\n# Alice\n\nA person.\n"
    )
    env = {"BASIC_MEMORY_HOME": str(notes), "BASIC_MEMORY_CONFIG_DIR": str(folder / "config"),
           "BASIC_MEMORY_NO_PROMOS": "1", "FASTMCP_CHECK_FOR_UPDATES": "off"}  # fmt: skip
    return StdioLaunch(pypi_program("basicmemory", "basic-memory", "0.24.1", "basic-memory"), ("mcp",), env)


def _markitdown(folder: Path) -> StdioLaunch:
    documents = folder / "documents"  # the server reads any file: URI; the cases name this folder's
    documents.mkdir()
    (documents / "table.csv").write_text("name,age\nalice,30\n")
    return StdioLaunch(pypi_program("markitdown", "markitdown-mcp", "0.0.1a8", "markitdown-mcp"))


def _time_node(folder: Path) -> StdioLaunch:
    return _launch(npm_program("time-mcp", "1.0.6"))


def _web_forager(folder: Path) -> StdioLaunch:
    return StdioLaunch(pypi_program("webforager", "web-forager", "4.0.0", "web-forager"), ("serve",))


def _fetch_images(folder: Path) -> StdioLaunch:
    return _launch(npm_program("@kazuph/mcp-fetch", "1.6.3"))


def _postgres_henkey(folder: Path) -> StdioLaunch:
    program = npm_program("@henkey/postgres-mcp-server", "1.0.7")
    return _launch(program, "--connection-string", f"{POSTGRES_URL}/{_postgres_database()}")


def _mariadb_berthojoris(folder: Path) -> StdioLaunch:
    program = npm_program("@berthojoris/mcp-mysql-server", "1.43.2")
    url = f"mysql://{MARIADB['user']}@{MARIADB['host']}:{MARIADB['port']}/{_mariadb_database()}"
    return _launch(program, url, "list,read,utility")  # the README's permissions: no writes


def _memory_libsql(folder: Path) -> StdioLaunch:
    """The server on a libSQL file of its scratch folder holding one entity, Alice, in the tables the server makes
    itself (it makes them only where they are missing)."""
    database = folder / "memory.db"
    with sqlite3.connect(database) as connection:
        connection.executescript(
            "CREATE TABLE entities (name TEXT PRIMARY KEY, entity_type TEXT NOT NULL, "
            "created_at DATETIME DEFAULT CURRENT_TIMESTAMP); "
            "CREATE TABLE observations (id INTEGER PRIMARY KEY AUTOINCREMENT, entity_name TEXT NOT NULL, "
            "content TEXT NOT NULL, created_at DATETIME DEFAULT CURRENT_TIMESTAMP, "
            "FOREIGN KEY (entity_name) REFERENCES entities(name)); "
            "CREATE TABLE relations (id INTEGER PRIMARY KEY AUTOINCREMENT, source TEXT NOT NULL, target TEXT NOT NULL, "
            "relation_type TEXT NOT NULL, created_at DATETIME DEFAULT CURRENT_TIMESTAMP, "
            "FOREIGN KEY (source) REFERENCES entities(name), FOREIGN KEY (target) REFERENCES entities(name)); "
            "INSERT INTO entities (name, entity_type) VALUES ('Alice', 'person'); "
            "INSERT INTO observations (entity_name, content) VALUES ('Alice', 'likes tea');"
        )
    connection.close()
    return _launch(npm_program("mcp-memory-libsql", "0.0.17"), env={"LIBSQL_URL": f"file:{database}"})


def _own_mosquitto(folder: Path) -> int:
    """The port of a ``mosquitto`` broker of this launch's own, on a free port of 127.0.0.1, anonymous, keeping
    nothing on disk, its config in ``folder``, stopped when the run ends. The machine's broker is never touched."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = folder / "mosquitto.conf"
    config.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n")
    process = subprocess.Popen(  # noqa: S603 (the system's mosquitto, a fixed config)
        [shutil.which("mosquitto") or "/usr/sbin/mosquitto", "-c", str(config)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    atexit.register(process.kill)
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return port
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"mosquitto on port {port} did not answer") from None
            time.sleep(0.1)


def _mqtt(folder: Path) -> StdioLaunch:
    program = pypi_program("mqtt5", "mqtt5-mcp-server", "0.1.0", "mqtt5-mcp-server")
    return StdioLaunch(program, (), {"MQTT_HOST": "127.0.0.1", "MQTT_PORT": str(_own_mosquitto(folder))})


def _redis_client(folder: Path) -> StdioLaunch:
    """The server on a ``redis-server`` of its own, as its single connection (the profile it names ``default``)."""
    port = _own_redis(folder).split(":")[-1].split("/")[0]
    program = pypi_program("redisclient", "redis-client-mcp-py", "0.1.1", "redis-client-mcp-py", "mcp<2")
    return StdioLaunch(program, (), {"REDIS_HOST": "127.0.0.1", "REDIS_PORT": port})


def _searxng(folder: Path) -> StdioLaunch:
    """The server pointed at a SearXNG instance that is down (nothing listens at 127.0.0.1:1): its searches fail as
    they do when the instance cannot be reached, and its page reader has no internet either."""
    return _launch(npm_program("mcp-searxng", "1.15.0"), env={"SEARXNG_URL": "http://127.0.0.1:1"})


def _git_cli(folder: Path) -> StdioLaunch:
    _repository(folder)  # the cases name its repository, and the folder that is none, by path
    return _launch(npm_program("mcp-git", "0.0.4"))


def _memory_bank(folder: Path) -> StdioLaunch:
    """The server on a memory bank of its scratch folder: one project, shop, with one file, projectbrief.md."""
    bank = folder / "bank"
    (bank / "shop").mkdir(parents=True)
    (bank / "shop" / "projectbrief.md").write_text("# Shop\n\nA web shop.\n")
    return _launch(npm_program("@allpepper/memory-bank-mcp", "0.2.2"), env={"MEMORY_BANK_ROOT": str(bank)})


def _fast_filesystem(folder: Path) -> StdioLaunch:
    """The server with its scratch folder's ``fsroot`` allowed (``--allow``) beside the folders it allows itself
    (the home folders and /tmp); the cases work in ``fsroot`` only."""
    root = folder / "fsroot"
    (root / "sub").mkdir(parents=True)
    (root / "hello.txt").write_text("hello\n")
    (root / "sub" / "hello.txt").write_text("hello\n")
    return _launch(npm_program("fast-filesystem-mcp", "3.5.2"), "--allow", str(root))


def _calc(folder: Path) -> StdioLaunch:
    return _launch(npm_program("@coo-quack/calc-mcp", "2.1.1"))


def _calculator(folder: Path) -> StdioLaunch:
    return StdioLaunch(pypi_program("calculator", "mcp-server-calculator", "0.2.1", "mcp-server-calculator"))


def _shell(folder: Path) -> StdioLaunch:
    """The server allowed the README's file commands (ls, cat, pwd, grep, wc, touch, find) and nothing else; the cases
    work in its scratch folder's ``work``, which holds ``hello.txt``."""
    work = folder / "work"
    work.mkdir()
    (work / "hello.txt").write_text("hello\n")
    program = pypi_program("shell", "mcp-shell-server", "1.1.14", "mcp-shell-server")
    return StdioLaunch(program, (), {"ALLOW_COMMANDS": "ls,cat,pwd,grep,wc,touch,find"})


def _git_tags(folder: Path) -> StdioLaunch:
    """The server on ``folder/repos`` (``GIT_REPOS_PATH``), which holds ``repo`` (one commit, no tag) and ``plain``
    (a folder that is no repository); the cases name them as the server does, by name."""
    repos = folder / "repos"
    repos.mkdir()
    _repository(repos)
    program = pypi_program("gitmcp", "git-mcp", "0.3.2", "git-mcp", "mcp<2")
    return StdioLaunch(program, (), {"GIT_REPOS_PATH": str(repos)})


def _postgres_antonorlov(folder: Path) -> StdioLaunch:
    """The server on a database of the corpus's own (``DATABASE_URL``), read-only, its default."""
    program = npm_program("mcp-postgres-server", "0.3.1")
    return _launch(program, env={"DATABASE_URL": f"{POSTGRES_URL}/{_postgres_database()}"})


def _curl(folder: Path) -> StdioLaunch:
    return _launch(npm_program("@mcp-get-community/server-curl", "0.1.0"))


def _alchemy(folder: Path) -> StdioLaunch:
    """The server on a MariaDB database of the corpus's own, through PyMySQL, which its README has installed beside it
    (``uvx --with pymysql mcp-alchemy``)."""
    program = pypi_program("alchemy", "mcp-alchemy", "2026.10.15.202659", "mcp-alchemy", "pymysql==1.2.4")
    url = f"mysql+pymysql://{MARIADB['user']}@{MARIADB['host']}:{MARIADB['port']}/{_mariadb_database()}"
    return StdioLaunch(program, (), {"DB_URL": url})


# A one-page PDF whose page says "Hello PDF", written out byte for byte (its cross-reference offsets computed).
def _one_page_pdf() -> bytes:
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 200] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length 44 >>\nstream\nBT /F1 18 Tf 20 100 Td (Hello PDF) Tj ET\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def _pdf_reader(folder: Path) -> StdioLaunch:
    """The server allowed ``folder/pdfs`` only (``--allow-dir``), which holds ``hello.pdf`` (one page) and
    ``plain.pdf``, a text file named as a PDF."""
    pdfs = folder / "pdfs"
    pdfs.mkdir()
    (pdfs / "hello.pdf").write_bytes(_one_page_pdf())
    (pdfs / "plain.pdf").write_text("not a pdf\n")
    return _launch(npm_program("@sylphx/pdf-reader-mcp", "2.4.0"), f"--allow-dir={pdfs}")


def _eslint(folder: Path) -> StdioLaunch:
    """The server on ``folder/project``, which holds an ``eslint.config.js`` (the recommended ``no-unused-vars`` rule
    alone) and ``app.js``, beside ``folder/bare``, whose ``app.js`` has no config file above it."""
    project = folder / "project"
    project.mkdir()
    (project / "eslint.config.js").write_text('export default [{ rules: { "no-unused-vars": "error" } }];\n')
    (project / "app.js").write_text("const unused = 1;\n")
    (folder / "bare").mkdir()
    (folder / "bare" / "app.js").write_text("const unused = 1;\n")
    return _launch(npm_program("@eslint/mcp", "0.3.13"))


def _obsidian(folder: Path) -> StdioLaunch:
    """The server on a vault holding ``Projects/Shop.md`` (with a tag), which the server names ``vault``. The server
    refuses a vault under /tmp or /var ("a system directory"), so the vault is made in a folder of its own beside
    the installed packages, ``var/upstreams/vault-<random>``, removed when the run ends."""
    home = UPSTREAMS_DIR / f"vault-{secrets.token_hex(6)}"
    vault = home / "vault"
    (vault / ".obsidian").mkdir(parents=True)
    atexit.register(shutil.rmtree, home, True)
    (vault / ".obsidian" / "app.json").write_text("{}\n")  # what Obsidian writes when it opens a folder as a vault
    (vault / "Projects").mkdir()
    (vault / "Projects" / "Shop.md").write_text("---\ntags: [project]\n---\n\n# Shop\n\nA web shop.\n")
    return _launch(npm_program("obsidian-mcp", "1.0.6"), str(vault))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _own_http_api(folder: Path) -> str:
    """The base URL of a small read-only HTTP API of this launch's own: Python's ``http.server`` on a free port of
    127.0.0.1 serving ``folder/api`` (``pets/1``, a JSON pet; any other path a 404; any write a 501), stopped when
    the run ends."""
    api = folder / "api"
    (api / "pets").mkdir(parents=True)
    (api / "pets" / "1").write_text(json.dumps({"id": 1, "name": "Rex", "tag": "dog"}) + "\n")
    port = _free_port()
    process = subprocess.Popen(  # noqa: S603 (this Python's http.server, fixed arguments)
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(api)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    atexit.register(process.kill)
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return f"http://127.0.0.1:{port}"
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"http.server on port {port} did not answer") from None
            time.sleep(0.1)


PETSTORE_SPEC = {
    "openapi": "3.0.3",
    "info": {"title": "Pets", "version": "1.0.0"},
    "paths": {
        "/pets/{petId}": {"get": {
            "operationId": "getPet", "summary": "One pet by its id",
            "parameters": [{"name": "petId", "in": "path", "required": True, "schema": {"type": "integer"}}],
            "responses": {"200": {"description": "The pet"}, "404": {"description": "No such pet"}},
        }},
        "/pets": {"post": {
            "operationId": "createPet", "summary": "Add a pet",
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["name"],
                "properties": {"name": {"type": "string"}, "tag": {"type": "string"}},
            }}}},
            "responses": {"201": {"description": "Added"}},
        }},
    },
}  # fmt: skip


def _openapi(folder: Path) -> StdioLaunch:
    """The server on a two-operation pet API (``openapi.json`` in its scratch folder), whose base URL is a small
    HTTP API of the launch's own (``_own_http_api``): it has pet 1, and answers writes with a 501."""
    spec = folder / "openapi.json"
    spec.write_text(json.dumps(PETSTORE_SPEC, indent=2) + "\n")
    program = npm_program("@ivotoby/openapi-mcp-server", "1.16.1")
    return _launch(program, "--api-base-url", _own_http_api(folder), "--openapi-spec", str(spec), "--verbose", "false")


def _bullmq(folder: Path) -> StdioLaunch:
    """The server on a ``redis-server`` of its own (``REDIS_URL``, the connection it names ``default``)."""
    return _launch(npm_program("@adamhancock/bullmq-mcp", "1.0.7"), env={"REDIS_URL": _own_redis(folder)})


def _github(folder: Path) -> StdioLaunch:
    return _launch(npm_program("@modelcontextprotocol/server-github", "2025.4.8"))


def _kubernetes(folder: Path) -> StdioLaunch:
    """The server on ``folder/kubeconfig``: one context, ``corpus``, whose cluster's API server (127.0.0.1:1) is
    down."""
    kubeconfig = folder / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: corpus\n  cluster:\n    server: https://127.0.0.1:1\n"
        "    insecure-skip-tls-verify: true\ncontexts:\n- name: corpus\n  context:\n    cluster: corpus\n"
        "    user: corpus\n    namespace: default\ncurrent-context: corpus\nusers:\n- name: corpus\n  user:\n"
        "    token: corpus-token\n"
    )
    return _launch(npm_program("mcp-server-kubernetes", "4.1.7"), env={"KUBECONFIG": str(kubeconfig)})


def _calendar(folder: Path) -> StdioLaunch:
    """The server with OAuth client keys (in the form Google's console downloads them) and no account signed in: no
    token file in its config folder (``XDG_CONFIG_HOME``, in the scratch folder). The keys go where the README's
    second way has them, ``gcp-oauth.keys.json`` in the package's folder, removed when the run ends: its first way, a
    path in ``GOOGLE_OAUTH_CREDENTIALS``, is a variable named like a secret, which errcatalog's import of an
    ``mcpServers`` block does not keep."""
    program = npm_program("@cocal/google-calendar-mcp", "2.6.3")
    keys = Path(program[1]).parent.parent / "gcp-oauth.keys.json"
    client = {"client_id": "corpus.apps.googleusercontent.com", "client_secret": "corpus-secret",
              "redirect_uris": ["http://localhost"]}  # fmt: skip
    keys.write_text(json.dumps({"installed": client}))
    atexit.register(keys.unlink, True)
    return _launch(program, env={"XDG_CONFIG_HOME": str(folder / "config")})


def _maven(folder: Path) -> StdioLaunch:
    return _launch(npm_program("mcp-maven-deps", "0.2.0"))


def _mongodb(folder: Path) -> StdioLaunch:
    env = {"MDB_MCP_TELEMETRY": "disabled", "MDB_MCP_LOG_PATH": str(folder / "logs"),
           "MDB_MCP_EXPORTS_PATH": str(folder / "exports")}  # fmt: skip
    return _launch(npm_program("mongodb-mcp-server", "3.0.4"), "--readOnly", env=env)


def _code_runner(folder: Path) -> StdioLaunch:
    return _launch(npm_program("mcp-server-code-runner", "0.1.8"))


def _arxiv(folder: Path) -> StdioLaunch:
    """The server keeping its papers and watched topics in ``folder/papers`` (``--storage-path``), which is empty."""
    papers = folder / "papers"
    papers.mkdir()
    program = pypi_program("arxiv", "arxiv-mcp-server", "0.8.2", "arxiv-mcp-server")
    return StdioLaunch(program, ("--storage-path", str(papers)))


def _task_master(folder: Path) -> StdioLaunch:
    """The server with its standard tools (``TASK_MASTER_TOOLS``) and no AI provider's API key, on the project
    ``folder/shop`` (the cases name it as ``projectRoot``): task 1 (done) and task 2 (pending, depending on 1) with one
    subtask, 2.1. Its home (``HOME``, where it keeps a folder of its own) is the scratch folder."""
    tasks = folder / "shop" / ".taskmaster" / "tasks"
    tasks.mkdir(parents=True)
    task = {"details": "", "testStrategy": "", "priority": "medium", "subtasks": []}
    subtask = {"id": 1, "title": "Cart total", "description": "", "details": "", "status": "pending",
               "dependencies": []}  # fmt: skip
    listing = [
        {**task, "id": 1, "title": "Set up the shop", "description": "Project skeleton", "status": "done",
         "dependencies": []},
        {**task, "id": 2, "title": "Checkout", "description": "Checkout page", "status": "pending", "dependencies": [1],
         "subtasks": [subtask]},
    ]  # fmt: skip
    metadata = {"created": "2024-01-01T00:00:00.000Z", "updated": "2024-01-01T00:00:00.000Z",
                "description": "Tasks for master context"}  # fmt: skip
    (tasks / "tasks.json").write_text(json.dumps({"master": {"tasks": listing, "metadata": metadata}}, indent=2))
    program = npm_program("task-master-ai", "0.43.1", "task-master-ai")
    return _launch(program, env={"TASK_MASTER_TOOLS": "standard", "HOME": str(folder)})


def _weather(folder: Path) -> StdioLaunch:
    """The server with no saved location, its home (``HOME``, where it keeps its saved locations) the scratch
    folder; its forecasts and geocoders have no internet."""
    return _launch(npm_program("@dangahagan/weather-mcp", "1.23.0"), env={"HOME": str(folder)})


EMAIL_CONFIG = """\
[[emails]]
account_name = "work"
full_name = "Corpus"
email_address = "corpus@example.invalid"

[emails.incoming]
user_name = "corpus"
password = "corpus-password"
host = "127.0.0.1"
port = 1
use_ssl = false

[emails.outgoing]
user_name = "corpus"
password = "corpus-password"
host = "127.0.0.1"
port = 1
use_ssl = false
"""


def _email(folder: Path) -> StdioLaunch:
    """The server on a settings file of its scratch folder (``MCP_EMAIL_SERVER_CONFIG_PATH``, its "legacy" TOML form,
    readable by its owner only) with one account, ``work``, whose IMAP and SMTP servers (127.0.0.1:1) are down; no
    recipient is allowed and attachment downloads are off, the defaults."""
    config = folder / "config.toml"
    config.write_text(EMAIL_CONFIG)
    config.chmod(0o600)
    program = pypi_program("email", "mcp-email-server", "1.13.3", "mcp-email-server")
    return StdioLaunch(program, ("stdio",), {"MCP_EMAIL_SERVER_CONFIG_PATH": str(config), "HOME": str(folder)})


def _chroma(folder: Path) -> StdioLaunch:
    """The server on a persistent Chroma of its scratch folder (``--data-dir``) holding one collection, ``notes``, with
    one document stored with its embedding; the default embedding model, which any new text needs, is not on the
    machine and cannot be downloaded. Its home (``HOME``, where the model would be kept) is the scratch folder."""
    program = pypi_program("chroma", "chroma-mcp", "0.2.5", "chroma-mcp", "mcp<2")
    data = folder / "chroma"
    subprocess.run(  # noqa: S603 (fixed script) seeded by the chromadb of the server's own environment
        [str(Path(program).parent / "python"), "-c", "import chromadb, sys; chromadb.PersistentClient(path=sys.argv[1])"
         ".create_collection('notes', embedding_function=None).add(ids=['n1'], embeddings=[[0.1, 0.2, 0.3]], "
         "documents=['The shop opens at nine.'])", str(data)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    env = {"HOME": str(folder), "ANONYMIZED_TELEMETRY": "False"}
    return StdioLaunch(program, ("--client-type", "persistent", "--data-dir", str(data)), env)


def _n8n(folder: Path) -> StdioLaunch:
    """The server as its README sets it up for stdio (``MCP_MODE``, quiet), with its telemetry off and no n8n instance
    (``N8N_API_URL``): its node and workflow tools work on the node database the package ships."""
    env = {"MCP_MODE": "stdio", "LOG_LEVEL": "error", "DISABLE_CONSOLE_OUTPUT": "true",
           "N8N_MCP_TELEMETRY_DISABLED": "true"}  # fmt: skip
    return _launch(npm_program("n8n-mcp", "2.87.0"), env=env)


def _word(folder: Path) -> StdioLaunch:
    """The server on documents the cases name by path in ``folder/docs``: ``report.docx`` (a heading, a paragraph and
    a table of two rows), made by the python-docx of the server's own environment, and ``plain.docx``, a text file
    named as a document. There is no LibreOffice on the machine, which its PDF conversion needs."""
    program = pypi_program("word", "office-word-mcp-server", "1.1.11", "word_mcp_server")
    docs = folder / "docs"
    docs.mkdir()
    subprocess.run(  # noqa: S603 (fixed script)
        [str(Path(program).parent / "python"), "-c", "import docx, sys; d = docx.Document(); "
         "d.add_heading('Report', 1); d.add_paragraph('Sales rose.'); t = d.add_table(rows=2, cols=2); "
         "t.cell(0, 0).text = 'q1'; t.cell(0, 1).text = '10'; d.save(sys.argv[1])", str(docs / "report.docx")],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    (docs / "plain.docx").write_text("not a document\n")
    return StdioLaunch(program, (), {"MCP_TRANSPORT": "stdio"})


def _tree_sitter(folder: Path) -> StdioLaunch:
    """The server with nothing registered yet; the cases register ``folder/code`` (``app.py``, with a function and a
    class) as a project, and name a folder that does not exist."""
    code = folder / "code"
    code.mkdir()
    (code / "app.py").write_text("def total(prices):\n    return sum(prices)\n\n\nclass Cart:\n    pass\n")
    return StdioLaunch(pypi_program("treesitter", "mcp-server-tree-sitter", "0.7.0", "mcp-server-tree-sitter", "mcp<2"))


def _duckdb2(folder: Path) -> StdioLaunch:
    """The server on a DuckDB file of its scratch folder holding the corpus's ``users`` table, read-only
    (``--readonly``, as its README has it for a database an agent is not to change)."""
    program = pypi_program("duckdb2", "mcp-server-duckdb", "1.1.0", "mcp-server-duckdb", "mcp<2")
    return StdioLaunch(program, ("--db-path", str(_seeded_duckdb(program, folder)), "--readonly"))


def _cli(folder: Path) -> StdioLaunch:
    """The server confined to its scratch folder's ``work`` (``ALLOWED_DIR``, holding ``hello.txt``), allowed the
    README's example commands (ls, cat, pwd, echo) and their flags -l, -a, --help, with a 5-second timeout."""
    work = folder / "work"
    work.mkdir()
    (work / "hello.txt").write_text("hello\n")
    env = {"ALLOWED_DIR": str(work), "ALLOWED_COMMANDS": "ls,cat,pwd,echo", "ALLOWED_FLAGS": "-l,-a,--help",
           "MAX_COMMAND_LENGTH": "1024", "COMMAND_TIMEOUT": "5"}  # fmt: skip
    return StdioLaunch(pypi_program("climcp", "cli-mcp-server", "0.2.5", "cli-mcp-server", "mcp<2"), (), env)


def _context7(folder: Path) -> StdioLaunch:
    """The server over stdio (its default transport) with no API key, which its README has as optional; its library
    search and documentation come from Context7's service, which it cannot reach without the internet."""
    return _launch(npm_program("@upstash/context7-mcp", "4.1.1"))


SHRIMP_TASK = "3f1c2a9e-8b4d-4e6f-9a1b-2c3d4e5f6a7b"  # the one task, done, of the task manager's data


def _shrimp(folder: Path) -> StdioLaunch:
    """The server on a data folder of its scratch folder (``DATA_DIR``) whose ``tasks.json`` holds one task, "Set up
    the shop" (``SHRIMP_TASK``), completed; in English (``TEMPLATES_USE``), its web page off (``ENABLE_GUI``)."""
    data = folder / "data"
    data.mkdir()
    task = {"id": SHRIMP_TASK, "name": "Set up the shop", "description": "Project skeleton", "notes": "",
            "status": "completed", "dependencies": [], "createdAt": "2024-01-01T00:00:00.000Z",
            "updatedAt": "2024-01-02T00:00:00.000Z", "completedAt": "2024-01-02T00:00:00.000Z",
            "summary": "Skeleton in place", "relatedFiles": []}  # fmt: skip
    (data / "tasks.json").write_text(json.dumps({"tasks": [task]}, indent=2))
    env = {"DATA_DIR": str(data), "TEMPLATES_USE": "en", "ENABLE_GUI": "false"}
    return _launch(npm_program("mcp-shrimp-task-manager", "1.0.21"), env=env)


SERVERS: dict[str, CorpusServer] = {
    server.name: server
    for server in (
        CorpusServer("time", "time", "PyPI mcp-server-time", "2026.10.19", True, _time),
        CorpusServer("git", "version-control", "PyPI mcp-server-git", "2026.10.19", True, _git),
        CorpusServer("fetch", "web", "PyPI mcp-server-fetch", "2026.10.24", True, _fetch),
        CorpusServer("files", "files", "npm @modelcontextprotocol/server-filesystem", "2026.8.31", True, _filesystem),
        CorpusServer("everything", "reference", "npm @modelcontextprotocol/server-everything", "2026.8.31", True,
                     _everything),
        CorpusServer("memory", "knowledge", "npm @modelcontextprotocol/server-memory", "2026.8.31", True, _memory),
        CorpusServer("thinking", "reasoning", "npm @modelcontextprotocol/server-sequential-thinking", "2026.8.31", True,
                     _thinking),
        CorpusServer("sqlite", "database", "PyPI mcp-server-sqlite", "2025.4.25", True, _sqlite),
        CorpusServer("postgres", "database", "npm @modelcontextprotocol/server-postgres", "0.6.2", True, _postgres),
        CorpusServer("mysql", "database", "npm @benborla29/mcp-server-mysql", "2.0.9", True, _mariadb),
        CorpusServer("redis", "cache", "npm @modelcontextprotocol/server-redis", "2025.4.25", True, _redis),
        CorpusServer("redis2", "cache", "PyPI redis-mcp-server", "0.5.1", True, _redis_official),
        CorpusServer("git2", "version-control", "npm @cyanheads/git-mcp-server", "2.15.3", True, _git_cyanheads),
        CorpusServer("fetch2", "web", "npm mcp-fetch-server", "1.1.2", True, _fetch_node),
        CorpusServer("duckdb", "database", "PyPI mcp-server-motherduck", "1.1.0", True, _duckdb),
        CorpusServer("files2", "files", "PyPI mcp-text-editor", "1.0.2", True, _text_editor),
        CorpusServer("memory2", "knowledge", "npm @itseasy21/mcp-knowledge-graph", "1.0.7", True, _knowledge_graph),
        CorpusServer("postgres2", "database", "npm @bytebase/dbhub", "1.4.0", True, _dbhub),
        CorpusServer("excel", "files", "PyPI excel-mcp-server", "2.2.2", True, _excel),
        CorpusServer("notes", "knowledge", "PyPI basic-memory", "0.24.1", True, _basic_memory),
        CorpusServer("markitdown", "files", "PyPI markitdown-mcp", "0.0.1a8", True, _markitdown),
        CorpusServer("time2", "time", "npm time-mcp", "1.0.6", True, _time_node),
        CorpusServer("search", "search", "PyPI web-forager", "4.0.0", True, _web_forager),
        CorpusServer("fetch3", "web", "npm @kazuph/mcp-fetch", "1.6.3", True, _fetch_images),
        CorpusServer("postgres3", "database", "npm @henkey/postgres-mcp-server", "1.0.7", True, _postgres_henkey),
        CorpusServer("mysql2", "database", "npm @berthojoris/mcp-mysql-server", "1.43.2", True, _mariadb_berthojoris),
        CorpusServer("memory3", "knowledge", "npm mcp-memory-libsql", "0.0.17", True, _memory_libsql),
        CorpusServer("mqtt", "queue", "PyPI mqtt5-mcp-server", "0.1.0", True, _mqtt),
        CorpusServer("redis3", "cache", "PyPI redis-client-mcp-py", "0.1.1", True, _redis_client),
        CorpusServer("search2", "search", "npm mcp-searxng", "1.15.0", True, _searxng),
        CorpusServer("git3", "version-control", "npm mcp-git", "0.0.4", True, _git_cli),
        CorpusServer("memory4", "knowledge", "npm @allpepper/memory-bank-mcp", "0.2.2", True, _memory_bank),
        CorpusServer("files3", "files", "npm fast-filesystem-mcp", "3.5.2", True, _fast_filesystem),
        CorpusServer("calc", "maths", "npm @coo-quack/calc-mcp", "2.1.1", True, _calc),
        CorpusServer("calculator", "maths", "PyPI mcp-server-calculator", "0.2.1", True, _calculator),
        CorpusServer("shell", "files", "PyPI mcp-shell-server", "1.1.14", True, _shell),
        CorpusServer("git4", "version-control", "PyPI git-mcp", "0.3.2", True, _git_tags),
        CorpusServer("postgres4", "database", "npm mcp-postgres-server", "0.3.1", True, _postgres_antonorlov),
        CorpusServer("curl", "web", "npm @mcp-get-community/server-curl", "0.1.0", True, _curl),
        CorpusServer("alchemy", "database", "PyPI mcp-alchemy", "2026.10.15.202659", True, _alchemy),
        CorpusServer("pdf", "files", "npm @sylphx/pdf-reader-mcp", "2.4.0", True, _pdf_reader),
        CorpusServer("eslint", "dev-tool", "npm @eslint/mcp", "0.3.13", True, _eslint),
        CorpusServer("obsidian", "knowledge", "npm obsidian-mcp", "1.0.6", True, _obsidian),
        CorpusServer("openapi", "web", "npm @ivotoby/openapi-mcp-server", "1.16.1", True, _openapi),
        CorpusServer("bullmq", "queue", "npm @adamhancock/bullmq-mcp", "1.0.7", True, _bullmq),
        CorpusServer("github", "version-control", "npm @modelcontextprotocol/server-github", "2025.4.8", True,
                     _github),
        CorpusServer("kubernetes", "cluster", "npm mcp-server-kubernetes", "4.1.7", True, _kubernetes),
        CorpusServer("calendar", "calendar", "npm @cocal/google-calendar-mcp", "2.6.3", True, _calendar),
        CorpusServer("maven", "registry", "npm mcp-maven-deps", "0.2.0", True, _maven),
        CorpusServer("mongodb", "database", "npm mongodb-mcp-server", "3.0.4", True, _mongodb),
        CorpusServer("coderunner", "dev-tool", "npm mcp-server-code-runner", "0.1.8", True, _code_runner),
        CorpusServer("arxiv", "science", "PyPI arxiv-mcp-server", "0.8.2", True, _arxiv),
        CorpusServer("taskmaster", "tracker", "npm task-master-ai", "0.43.1", True, _task_master),
        CorpusServer("weather", "weather", "npm @dangahagan/weather-mcp", "1.23.0", True, _weather),
        CorpusServer("email", "messaging", "PyPI mcp-email-server", "1.13.3", True, _email),
        CorpusServer("chroma", "vector-store", "PyPI chroma-mcp", "0.2.5", True, _chroma),
        CorpusServer("n8n", "automation", "npm n8n-mcp", "2.87.0", True, _n8n),
        CorpusServer("word", "files", "PyPI office-word-mcp-server", "1.1.11", True, _word),
        CorpusServer("treesitter", "dev-tool", "PyPI mcp-server-tree-sitter", "0.7.0", True, _tree_sitter),
        CorpusServer("duckdb2", "database", "PyPI mcp-server-duckdb", "1.1.0", True, _duckdb2),
        CorpusServer("cli", "dev-tool", "PyPI cli-mcp-server", "0.2.5", True, _cli),
        CorpusServer("context7", "reference", "npm @upstash/context7-mcp", "4.1.1", True, _context7),
        CorpusServer("shrimp", "tracker", "npm mcp-shrimp-task-manager", "1.0.21", True, _shrimp),
    )
}  # fmt: skip
