#!/usr/bin/env python3
"""The newcomer's walk in the real window (issue 22): starts the desktop app on a virtual X
display (Xvfb) from a fresh profile (empty temporary HOME and XDG folders), drives it with the
mouse and keyboard (xdotool) as a user would, and plays three goals:

1. a beginner whose Llama 3.1 8B fine-tune ran out of memory on a 12 GB RTX 3060: pastes the
   OOM message into the doctor, opens a fix in the planner, applies the plan;
2. a ComfyUI user with an 8 GB RTX 4060 sizing SDXL and then Flux;
3. a gamer checking Cyberpunk 2077 at 1440p with ray tracing.

Each goal must end with a consistent verdict (one of fits / streams / does not fit, agreeing
with its own figures and with the safety margin) and a plan that applies: after "Apply plan" the
workload runs, and no further change is recommended. Widgets are found by their accessible
label and clicked at their place on screen, from the app's probe (VRAM_DOCTOR_PROBE, see
src/ui/probe.rs), which also reports the verdict and plan the window shows.

    tools/walk.py [--app PATH] [--shots DIR]

--app: the binary (default target/release/vram-doctor); --shots: where the screenshots go
(default: a temporary folder); one PNG per goal, taken with ImageMagick's `import`.
Exit status 0 when every check passed, 1 with the failed check on stderr, 2 when a tool is
missing (Xvfb, xdotool, import).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

WAIT_S = 30.0


class WalkError(Exception):
    pass


class App:
    """The running app on its display, seen through the probe file."""

    def __init__(self, binary, workdir, display):
        self.display = display
        self.probe = os.path.join(workdir, "probe.json")
        home = os.path.join(workdir, "home")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "WAYLAND"))}
        runtime = os.path.join(workdir, "runtime")
        for d in (home, runtime):
            os.makedirs(d, mode=0o700, exist_ok=True)
        env.update(
            HOME=home,
            XDG_CONFIG_HOME=os.path.join(home, ".config"),
            XDG_DATA_HOME=os.path.join(home, ".local/share"),
            XDG_CACHE_HOME=os.path.join(home, ".cache"),
            XDG_STATE_HOME=os.path.join(home, ".local/state"),
            XDG_RUNTIME_DIR=runtime,
            DISPLAY=display,
            LANG="C.UTF-8",
            LC_ALL="C.UTF-8",
            VRAM_DOCTOR_PROBE=self.probe,
        )
        self.env = env
        self.log = open(os.path.join(workdir, "app.log"), "w")
        self.proc = subprocess.Popen([binary], env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self.window = None
        self.report = None

    def xdotool(self, *args):
        r = subprocess.run(["xdotool", *args], env=self.env, capture_output=True, text=True)
        return r.stdout.strip()

    def read(self):
        try:
            with open(self.probe) as f:
                self.report = json.load(f)
        except (OSError, ValueError):
            pass
        return self.report

    def wait(self, what, pred, timeout=WAIT_S):
        """Waits until `pred(report)` holds; fails naming `what`."""
        end = time.time() + timeout
        while time.time() < end:
            if self.proc.poll() is not None:
                raise WalkError(f"the app exited ({self.proc.returncode}) while waiting for {what}")
            r = self.read()
            if r is not None:
                try:
                    v = pred(r)
                except (KeyError, TypeError, IndexError):
                    v = None
                if v:
                    return v
            time.sleep(0.1)
        raise WalkError(f"timed out after {timeout:.0f} s waiting for {what}")

    def start(self):
        self.wait("the first frame", lambda r: r["widgets"])
        end = time.time() + WAIT_S
        while not self.window and time.time() < end:
            self.window = self.xdotool("search", "--onlyvisible", "--name", "^VRAM Doctor$").split("\n")[0]
            time.sleep(0.2)
        if not self.window:
            raise WalkError("no window titled 'VRAM Doctor'")
        # No window manager runs on the display to give the window the keyboard: ask X for it.
        self.xdotool("windowfocus", "--sync", self.window)
        geometry = dict(
            line.split("=") for line in self.xdotool("getwindowgeometry", "--shell", self.window).split("\n") if "=" in line
        )
        self.size = (int(geometry["WIDTH"]), int(geometry["HEIGHT"]))

    def find(self, label=None, role=None, value=None, contains=None):
        """The widgets of the last report with that label (exactly, or containing `contains`)."""
        r = self.report or {}
        out = []
        for w in r.get("widgets", []):
            text = w.get("label") or w.get("value") or ""
            if label is not None and w.get("label") != label and w.get("value") != label:
                continue
            if contains is not None and contains not in text:
                continue
            if role is not None and w["role"] != role:
                continue
            if value is not None and w.get("value") != value:
                continue
            out.append(w)
        return out

    def click(self, label=None, role=None, contains=None, nth=0):
        """Clicks the widget with that label at its centre, once it is on screen."""
        what = f"{role or 'widget'} {label or contains!r}"
        last = None
        for _ in range(40):
            ws = self.wait(what, lambda r: self.find(label, role, contains=contains))
            w = ws[min(nth, len(ws) - 1)]
            x0, y0, x1, y1 = w["rect"]
            if w["rect"] != last:
                # Still moving (a scroll animates over several frames): look again.
                last = w["rect"]
                self.settle(self.report["frame"])
                continue
            # Below or above the window: scroll its panel as a user would, with the wheel.
            wheel = "5" if (y0 + y1) / 2 > self.size[1] - 4 else "4" if (y0 + y1) / 2 < 4 else None
            if wheel is None:
                break
            frame = self.report["frame"]
            x = min(max((x0 + x1) / 2, 4), self.size[0] - 4)
            self.xdotool("mousemove", "--window", self.window, str(int(x)), str(self.size[1] // 2))
            self.xdotool("click", "--repeat", "3", wheel)
            self.settle(frame)
        else:
            raise WalkError(f"{what} stays out of the window at {w['rect']}")
        frame = self.report["frame"]
        self.xdotool("mousemove", "--window", self.window, str(int((x0 + x1) / 2)), str(int((y0 + y1) / 2)))
        time.sleep(0.1)
        self.xdotool("click", "1")
        self.settle(frame)
        return w

    def settle(self, frame):
        """Waits for the frames an input causes to be drawn."""
        try:
            self.wait("a new frame", lambda r: r["frame"] > frame, timeout=2)
        except WalkError:
            pass
        time.sleep(0.25)
        self.read()

    def type(self, text):
        frame = (self.read() or {}).get("frame", 0)
        self.xdotool("type", "--delay", "8", text)
        self.settle(frame)

    def key(self, *keys):
        frame = (self.read() or {}).get("frame", 0)
        self.xdotool("key", *keys)
        self.settle(frame)

    def state(self):
        return self.read()["state"]

    def planned(self):
        p = self.state()["planner"]
        if p["result"] is None:
            raise WalkError(f"the planner cannot estimate the workload: {p['error']}")
        return p

    def shot(self, path):
        # The probe writes a frame before it is painted; painting on a software renderer takes a
        # while (a shot taken at once showed the frame before "Apply plan").
        time.sleep(1.5)
        subprocess.run(["import", "-window", self.window, path], env=self.env, check=True)
        print(f"screenshot: {path}")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def gib(b):
    return b / 2**30


WORDS = {"fits": "Fits with ", "streams": "Fits only by streaming ", "short": "Does not fit, "}


def shown_verdict(r):
    """The verdict in the report's state and the verdict lines its widgets show, when they agree
    (a frame draws what the state was when it began: an input's effect shows one frame later)."""
    v = r["state"]["planner"]["result"]["verdict"]
    lines = [w["value"] for w in r["widgets"] if (w.get("value") or "").startswith(tuple(WORDS.values()))]
    return len(lines) == 1 and lines[0].startswith(WORDS[v["fit"]["kind"]]) and (r["state"]["planner"], lines[0])


def check_verdict(app, goal):
    """The verdict is one of three, agrees with its own figures and with what the window says."""
    try:
        p, line = app.wait("the window to show the verdict", shown_verdict, timeout=5)
    except WalkError:
        r = app.read()
        lines = [w["value"] for w in r["widgets"] if (w.get("value") or "").startswith(tuple(WORDS.values()))]
        raise WalkError(f"{goal}: the verdict is {r['state']['planner']['result']['verdict']} but the window shows {lines}")
    v = p["result"]["verdict"]
    kind = v["fit"]["kind"]
    need, cap, margin = v["need_bytes"], v["capacity_bytes"], v["margin_bytes"]
    if kind == "fits" and need + margin > cap:
        raise WalkError(f"{goal}: 'fits' with {gib(need):.2f} + margin {gib(margin):.2f} GiB on {gib(cap):.2f}")
    if kind == "short" and need + margin <= cap:
        raise WalkError(f"{goal}: 'does not fit' although {gib(need):.2f} GiB leaves the margin free")
    if kind == "streams" and v["fit"]["streamed_bytes"] <= 0:
        raise WalkError(f"{goal}: streams nothing")
    if p["result"]["fits"] != (kind != "short"):
        raise WalkError(f"{goal}: fits = {p['result']['fits']} beside verdict {kind}")
    print(f"{goal}: {line}")
    return kind


def apply_plan(app, goal):
    """Applies the recommended plan until none is left (at most three presses); the workload then
    runs and the plan's promised figure is what the planner now says."""
    for _ in range(3):
        p = app.planned()
        plan = p["result"]["plan"]
        if not plan["strategies"]:
            break
        if not plan["fits"]:
            raise WalkError(f"{goal}: the plan does not fit: {plan['why']}")
        promised = plan["process_bytes"]
        print(f"{goal}: applying {' + '.join(plan['strategies'])}")
        before = p["workload"]
        app.click("Apply plan", role="Button")
        after = app.wait("the plan to change the workload", lambda r: r["state"]["planner"]["workload"] != before and r["state"]["planner"])
        got = after["result"]["peak"]["process_bytes"] if after["result"] else None
        if "details" not in plan and got is not None and abs(got - promised) > 2**20:
            raise WalkError(f"{goal}: the plan promised {gib(promised):.2f} GiB, the planner now says {gib(got):.2f}")
    p = app.planned()
    if p["result"]["plan"]["strategies"]:
        raise WalkError(f"{goal}: after three presses a plan is still recommended: {p['result']['plan']['strategies']}")
    if not p["result"]["fits"]:
        raise WalkError(f"{goal}: after the plan it still does not run")
    return check_verdict(app, goal + " after the plan")


def search(app, label):
    """Opens the searchable list `label` and waits for its search box to be drawn: keys typed in
    the frame that opens the list land before the box has the keyboard (on a loaded machine
    "3060 12" lost its "3" and Enter took the RTX 2060 12GB)."""
    combo = app.click(label, role="ComboBox")["rect"]

    def box_under_it(r):
        # The list opens under its combo box, the search box on top of it.
        return [
            w for w in app.find(role="TextInput") if combo[3] - 2 <= w["rect"][1] <= combo[3] + 80 and w["rect"][0] < combo[2]
        ]

    app.wait(f"the search box of {label}", box_under_it)
    app.settle(app.report["frame"])


def open_list(app, label, entry):
    """Opens the plain list `label` until `entry` shows: a click in the frame that closes the
    list before it (the title's search) only closes that one, as it would for a quick user."""
    for _ in range(3):
        app.click(label, role="ComboBox")
        try:
            return app.wait(f"{entry} in the list {label}", lambda r: app.find(entry), timeout=5)
        except WalkError:
            continue
    raise WalkError(f"the list {label} does not open")


def pick_gpu(app, search_for, expect):
    """The top bar's GPU picker: open it, type to filter, Enter takes the first match."""
    search(app, "GPU")
    app.type(search_for)
    app.key("Return")
    app.wait(f"the GPU {expect}", lambda r: r["state"]["planner"]["workload"]["gpu"].get("preset") == expect)


def pick_model(app, search_for, expect, label="Model"):
    search(app, label)
    app.type(search_for)
    app.key("Return")
    app.wait(f"the model {expect}", lambda r: r["state"]["planner"]["workload"]["model"].get("preset") == expect)


OOM = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 41, in <module>\n'
    "    trainer.train()\n"
    '  File "transformers/trainer.py", line 2241, in train\n'
    "    loss.backward()\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 0 has a total "
    "capacity of 11.76 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process "
    "has 10.72 GiB memory in use. Of the allocated memory 9.87 GiB is allocated by PyTorch, and "
    "0.68 GiB is reserved by PyTorch but unallocated."
)


def beginner(app, shots):
    goal = "beginner (Llama 3.1 8B fine-tune, RTX 3060 12 GB)"
    app.click("LLM training", role="Button")
    pick_gpu(app, "3060 12", "rtx-3060-12gb")
    pick_model(app, "llama 3.1 8b", "llama-3.1-8b")
    check_verdict(app, goal + " as planned")
    app.click("Doctor", role="Button")
    app.click("Error message", role="MultilineTextInput")
    app.type(OOM)
    app.key("ctrl+Return")
    note = app.wait("the doctor's reading", lambda r: r["state"]["doctor"]["note"])
    if not note.startswith("Recognised:"):
        raise WalkError(f"{goal}: the doctor did not recognise the OOM: {note!r}")
    print(f"{goal}: {note}")
    app.click("At the first training step", role="Button")
    app.click("Open in planner", role="Button")
    p = app.wait("the planner", lambda r: r["state"]["tab"] == "Planner" and r["state"]["planner"])
    w = p["workload"]
    if w["run"].get("task") != "training" or w["model"].get("preset") != "llama-3.1-8b":
        raise WalkError(f"{goal}: 'Open in planner' opened {w}")
    check_verdict(app, goal + " opened from the doctor")
    apply_plan(app, goal)
    app.shot(os.path.join(shots, "walk-beginner.png"))


def comfyui(app, shots):
    goal = "ComfyUI user (RTX 4060 8 GB)"
    app.click("Diffusion", role="Button")
    pick_gpu(app, "4060", "rtx-4060")
    for search, model in (("sdxl", "sdxl"), ("flux.1 [dev]", "flux-dev")):
        pick_model(app, search, model, label="Diffusion model")
        check_verdict(app, f"{goal}, {model}")
        apply_plan(app, f"{goal}, {model}")
    app.shot(os.path.join(shots, "walk-comfyui.png"))


def gamer(app, shots):
    goal = "gamer (Cyberpunk 2077, 1440p, ray tracing)"
    app.click("Game", role="Button")
    search(app, "Title")
    app.type("cyberpunk")
    app.key("Return")
    app.wait("Cyberpunk 2077", lambda r: r["state"]["planner"]["workload"]["model"].get("preset") == "cyberpunk-2077")
    open_list(app, "Resolution", "2560x1440")
    app.click("2560x1440")
    app.wait("1440p", lambda r: r["state"]["planner"]["workload"]["run"].get("resolution") == "2560x1440")
    if not app.find("Ray tracing", role="CheckBox")[0].get("toggled"):
        app.click("Ray tracing", role="CheckBox")
    app.wait("ray tracing on", lambda r: r["state"]["planner"]["workload"]["run"].get("ray_tracing"))
    check_verdict(app, goal)
    apply_plan(app, goal)
    app.shot(os.path.join(shots, "walk-gamer.png"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--app", default="target/release/vram-doctor")
    ap.add_argument("--shots")
    args = ap.parse_args()
    missing = [t for t in ("Xvfb", "xdotool", "import") if shutil.which(t) is None]
    if missing:
        print(f"walk: missing {', '.join(missing)} (Debian: xvfb xdotool imagemagick)", file=sys.stderr)
        return 2
    if not os.access(args.app, os.X_OK):
        print(f"walk: no app at {args.app}", file=sys.stderr)
        return 2
    work = tempfile.mkdtemp(prefix="vram-doctor-walk-")
    shots = args.shots or work
    os.makedirs(shots, exist_ok=True)
    xvfb = subprocess.Popen(
        ["Xvfb", "-displayfd", "1", "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    display = ":" + xvfb.stdout.readline().strip()
    app = App(os.path.abspath(args.app), work, display)
    started = time.time()
    try:
        app.start()
        for goal in (beginner, comfyui, gamer):
            t = time.time()
            goal(app, shots)
            print(f"{goal.__name__}: done in {time.time() - t:.1f} s")
    except WalkError as e:
        app.shot(os.path.join(work, "failed.png"))
        print(f"walk: FAILED: {e}\n(the window at that moment: {work}/failed.png; the last probe: {app.probe})", file=sys.stderr)
        return 1
    finally:
        app.stop()
        xvfb.terminate()
    print(f"walk: all three goals passed in {time.time() - started:.1f} s")
    if args.shots:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
