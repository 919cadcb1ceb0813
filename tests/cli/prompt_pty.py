"""Drives `cprof SOURCE` through a pseudo-terminal, as a person would type
at it, for tests/cli/prompt.sh (standard library only).

usage: prompt_pty.py OUTDIR CPROF ARGS... < COMMANDS

Each line of COMMANDS is sent as typed (with Python escapes: "\\x1b[A" is
the up arrow), then everything up to the next "(cprof) " prompt is kept in
OUTDIR/NNN.out: what the terminal showed, escape sequences and carriage
returns removed, the echoed command line dropped. OUTDIR/greeting.out has
what came before the first prompt, OUTDIR/rc the exit status. Exits 1 if the
prompt does not come back within 20 seconds. With PTY_STDIN=FILE in the
environment, the program's standard input is FILE (for `cprof -`, which
then reads commands from its terminal, /dev/tty).

A "web ..." command is awaited differently: when the program says "Serving
web UI on URL", the page at URL is fetched into OUTDIR/NNN.page, then Ctrl-C
is typed, which should bring the prompt back.
"""
import codecs
import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
import urllib.request

PROMPT = b"(cprof) "
ESCAPES = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]|\x07")


def clean(raw):
    """The text a terminal would leave: no escapes, no carriage returns."""
    text = ESCAPES.sub(b"", raw).replace(b"\r\n", b"\n")
    lines = [line.split(b"\r")[-1] for line in text.split(b"\n")]
    return b"\n".join(lines)


def raw_mode(master):
    """Waits (at most 5 s) for libedit to take the terminal out of canonical
    mode after printing its prompt: what is typed before that is echoed by
    the terminal itself, and then once more by libedit."""
    deadline = time.monotonic() + 5
    while termios.tcgetattr(master)[3] & termios.ICANON and time.monotonic() < deadline:
        time.sleep(0.01)


def serve(master, page):
    """Fetches the page the web command serves, then types Ctrl-C."""
    seen = b""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if select.select([master], [], [], 0.5)[0]:
            seen += os.read(master, 65536)
        m = re.search(rb"Serving web UI on (http://\S+)", seen)
        if m:
            with urllib.request.urlopen(m.group(1).decode(), timeout=20) as r, \
                    open(page, "wb") as f:
                f.write(r.read())
            break
    os.write(master, b"\x03")
    return seen


def main():
    outdir, argv = sys.argv[1], sys.argv[2:]
    commands = [codecs.decode(line.rstrip("\n"), "unicode_escape") for line in sys.stdin]
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    env = dict(os.environ, TERM="xterm", COLUMNS="200", LINES="50")
    stdin = open(os.environ["PTY_STDIN"], "rb") if os.environ.get("PTY_STDIN") else slave
    # The terminal becomes the child's controlling one (its /dev/tty).
    child = subprocess.Popen(argv, stdin=stdin, stdout=slave, stderr=slave, env=env,
                             start_new_session=True,
                             preexec_fn=lambda: fcntl.ioctl(1, termios.TIOCSCTTY, 0))
    os.close(slave)
    buf = b""

    def until_prompt():
        nonlocal buf
        deadline = time.monotonic() + 20
        while PROMPT not in buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([master], [], [], left)[0]:
                return None
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                return None
            if not data:
                return None
            buf += data
        got, buf = buf.split(PROMPT, 1)
        return got

    got = until_prompt()
    if got is None:
        sys.stderr.write("no first prompt; the terminal showed:\n%r\n" % buf)
        child.kill()
        return 1
    with open(os.path.join(outdir, "greeting.out"), "wb") as f:
        f.write(clean(got))
    for i, cmd in enumerate(commands):
        raw_mode(master)
        os.write(master, cmd.encode("utf-8", "surrogateescape") + b"\n")
        last = cmd in ("quit", "exit", "q")
        if cmd.startswith("web"):
            buf += serve(master, os.path.join(outdir, "%03d.page" % i))
        got = b"" if last else until_prompt()
        if got is None:
            sys.stderr.write("no prompt after %r; the terminal showed:\n%r\n" % (cmd, buf))
            child.kill()
            return 1
        text = clean(got)
        text = text.split(b"\n", 1)[1] if b"\n" in text else b""  # the echoed line
        with open(os.path.join(outdir, "%03d.out" % i), "wb") as f:
            f.write(text)
    try:
        rc = child.wait(timeout=20)
    except subprocess.TimeoutExpired:
        child.kill()
        rc = "timeout"
    with open(os.path.join(outdir, "rc"), "w") as f:
        f.write("%s\n" % rc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
