"""What `turnlog run --interactive` adds to a run: the driver, the attach, the command
channel, the first prompt (docs/runner.md, "Interactive runs"; docs/control.md).

The output path is the plain run's (spool, pump, batcher); this only starts the agent
as its driver needs it, with its stdin a pipe held open, and acts on the server's
commands in a thread of its own.
"""
import uuid

from app.client.drivers import DriveFailed
from app.client.drivers import driver_for
from app.client.errors import RunnerFailed
from app.client.interactive.control import Channel
from app.client.interactive.control import Commander

# How long the run waits, after the agent exited, for the command thread to finish the
# command in hand (its acknowledgement) before completing the session.
CLOSE_WAIT_SECONDS = 10.0


class Interactive:
    def __init__(self, request, writer, session_id, spool, state, *, sender, log):
        self.request = request
        self.writer = writer
        self.session_id = session_id
        self.spool = spool
        self.state = state
        self.sender = sender
        self.log = log
        self.driver = driver_for(request.driver, list(request.command))
        self.commander = None
        self.channel = None
        self._noted_session = state.agent_session_id if state else None
        if request.prompt is not None and "send" not in self.driver.controls:
            raise RunnerFailed(f"--prompt needs a driver that can send input; the"
                               f" {self.driver.name} driver cannot (--driver claude?)")

    def command(self):
        """Attach (saying what this runner offers); the argv to start the agent with."""
        argv, added = self.driver.command(list(self.request.command), self._noted_session)
        if added:
            self.log(f"driving the agent with the {self.driver.name} driver; added to its"
                     f" command: {' '.join(added)}")
        controls = list(self.driver.controls)
        self.sender.retrying("attaching the runner", lambda: self.writer.attach_runner(
            self.session_id, controls))
        self.log(f"attached; the session takes: {', '.join(controls)}")
        return argv

    def translate(self, text):
        """Each stdout line through the driver (in the reader thread); notes the agent's
        own session id in the spool when it first sees it or it changes."""
        lines = self.driver.on_line(text)
        seen = self.driver.agent_session_id
        if seen and seen != self._noted_session:
            self._noted_session = seen
            self.spool.record_agent_session(seen)
        return lines

    def start(self, child):
        """The agent runs: write the first prompt, then read the command channel."""
        self.driver.bind(child.process.stdin,
                         lambda text: child.lines.put(child.record("stdout", text)))
        own = self.writer.with_token(self.writer.token)  # requests sessions are per thread
        self.commander = Commander(
            self.driver, child, self.spool, own, self.session_id, log=self.log,
            done=self.state.commands_done if self.state else (),
            stop_grace=self.request.stop_grace)
        prompt = self.request.prompt
        if prompt is not None and self.state and self.state.prompt_sent:
            self.log("the --prompt was written to the agent before this run: not again")
        elif prompt is not None:
            prompt_uuid = str(uuid.uuid4())
            try:
                self.driver.send(prompt_uuid, prompt)
                self.spool.record_prompt(prompt_uuid)
            except DriveFailed as err:  # it died at once: its lines and exit code say why
                self.log(f"the --prompt did not reach the agent: {err}")
        self.channel = Channel(own, self.session_id, self.commander.handle, log=self.log).start()

    def stop_locally(self):
        if self.commander is not None:
            self.commander.stop_locally()

    def close(self):
        """The agent has exited: stop reading commands (after the one in hand)."""
        if self.channel is not None:
            self.channel.close(CLOSE_WAIT_SECONDS + 2 * self.request.stop_grace)
        self.driver.close_stdin()
