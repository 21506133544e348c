"""Kills one rank of a running `loom-run train --nproc N` and reports.

usage: kill-rank.py --rank R --after-file FILE [--timeout S] -- COMMAND...

Starts COMMAND (a launcher), waits until FILE exists (a checkpoint), sends
SIGKILL to the launcher's child whose environment has RANK=R, and waits for
the launcher to exit. Prints the launcher's output, then its exit code and
the seconds between the kill and its exit. Standard library only, so that
`make test` needs no pip packages.
"""
import os
import signal
import subprocess
import sys
import time


def children_of(pid):
    result = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                # The parent pid is the 4th field after the parenthesized name.
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                result.append(int(entry))
        except OSError:
            continue
    return result


def rank_of(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for item in f.read().split(b"\0"):
                if item.startswith(b"RANK="):
                    return int(item[5:])
    except OSError:
        pass
    return None


def main():
    args = sys.argv[1:]
    split = args.index("--")
    options = dict(zip(args[:split:2], args[1:split:2]))
    command = args[split + 1:]
    rank = int(options["--rank"])
    after = options["--after-file"]
    timeout = float(options.get("--timeout", "120"))

    launcher = subprocess.Popen(command, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + timeout
    while not os.path.exists(after):
        if launcher.poll() is not None or time.monotonic() > deadline:
            print(launcher.communicate()[0])
            print(f"{after} never appeared")
            return 1
        time.sleep(0.01)
    victim = next((p for p in children_of(launcher.pid) if rank_of(p) == rank),
                  None)
    if victim is None:
        print(f"no rank {rank} among the launcher's children")
        return 1
    os.kill(victim, signal.SIGKILL)
    killed = time.monotonic()
    try:
        output = launcher.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        launcher.kill()
        print(f"the launcher did not exit within {timeout} s of the kill")
        return 1
    print(output, end="")
    print(f"killed rank {rank}; the launcher exited with code "
          f"{launcher.returncode} after {time.monotonic() - killed:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
