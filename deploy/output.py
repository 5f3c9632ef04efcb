"""A supervisord event listener that copies every program's output to the terminal, each
line prefixed with the program's name (`web      | GET / 200`), as one stream.

supervisord sends PROCESS_LOG events (of programs with stdout_events_enabled) on this
process's stdin and reads its answers on stdout, so the lines go out on stderr, which
deploy/supervisord.conf sends to the terminal. The protocol counts bytes, so stdin is read
as bytes (supervisor.childutils reads characters, which goes wrong on the first "→")."""
import sys

WIDTH = 9  # the names line up: "worker0  | …"


def main() -> None:
    events, answers, out = sys.stdin.buffer, sys.stdout, sys.stderr.buffer
    partial: dict[bytes, bytes] = {}  # a program's unfinished last line, until its end arrives
    while True:
        answers.write("READY\n")
        answers.flush()
        header = dict(token.split(b":", 1) for token in events.readline().split())
        payload = events.read(int(header[b"len"]))
        if header[b"eventname"].startswith(b"PROCESS_LOG"):
            meta, data = payload.split(b"\n", 1)
            name = dict(token.split(b":", 1) for token in meta.split())[b"processname"]
            lines = (partial.pop(name, b"") + data).split(b"\n")
            if lines[-1]:
                partial[name] = lines[-1]
            prefix = name.ljust(WIDTH) + b"| "
            out.write(b"".join(prefix + line + b"\n" for line in lines[:-1]))
            out.flush()
        answers.write("RESULT 2\nOK")
        answers.flush()


if __name__ == "__main__":
    main()
