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


def test_rearming_moves_the_deadline_on_one_thread():
    import time

    fired = threading.Event()
    messages = []
    dog = StepWatchdog(0.3, abort=lambda m: (messages.append(m), fired.set()))
    before = threading.active_count()
    start = time.monotonic()
    for step in range(8):  # 8 arms 0.1 s apart: 0.8 s in all, each within the 0.3 s budget
        dog.arm(step, (0, 1))
        assert threading.active_count() <= before + 1
        assert not fired.wait(0.1)
    assert fired.wait(5)
    assert time.monotonic() - start >= 0.7 + 0.3 - 0.05  # counted from the last arm
    assert messages == ["step 7 made no progress for 0.3 s on members 0 1; aborting the job"]


def test_a_disarmed_dog_can_be_armed_again():
    fired = threading.Event()
    dog = StepWatchdog(0.05, abort=lambda m: fired.set())
    dog.arm(0, (0,))
    dog.disarm()
    assert not fired.wait(0.2)
    dog.arm(1, (0,))
    assert fired.wait(5)
