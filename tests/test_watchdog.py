"""The step watchdog fires once a step overruns its budget, and not after a disarm."""
import threading

from mpibench.engine.watchdog import StepWatchdog, budget_for


def test_fires_with_step_and_members():
    fired = threading.Event()
    messages = []
    dog = StepWatchdog(0.05, abort=lambda m: (messages.append(m), fired.set()))
    dog.arm(4, (0, 2, 3))
    assert fired.wait(5)
    assert messages == ["step 4 made no progress for 0.05 s on members 0 2 3; aborting the job"]


def test_disarm_and_rearm_cancel_the_previous_step():
    fired = threading.Event()
    dog = StepWatchdog(0.2, abort=lambda m: fired.set())
    dog.arm(0, (0,))
    dog.arm(1, (0,))
    dog.disarm()
    assert not fired.wait(0.5)


def test_budget_scales_with_the_deadline():
    assert budget_for(30.0) == 300.0 and budget_for(0.1) == 5.0
