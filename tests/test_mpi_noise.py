"""The stderr filter drops exactly libnbc's known-harmless lines (errors 75 and 77, each with
its blank line) and passes everything else through unchanged and in order."""
import subprocess
import sys

import pytest

from mpibench.mpi_noise import FILTER

NBC = "NBC_Progress: an error {code} was found during schedule 0x55d6f3882fd0 at row-offset {row} - aborting the schedule\n"


def filtered(text: str) -> str:
    return subprocess.run([sys.executable, "-I", "-S", "-c", FILTER], input=text.encode(), capture_output=True,
                          timeout=30, check=True).stdout.decode()


@pytest.mark.parametrize("code", [75, 77])
@pytest.mark.parametrize("row", [0, 3, -1])
def test_harmless_lines_and_their_blank_line_are_dropped(code, row):
    text = "before\n" + NBC.format(code=code, row=row) + "\n" + "after\n"
    assert filtered(text) == "before\nafter\n"


@pytest.mark.parametrize("text", [
    NBC.format(code=12, row=0) + "\n",  # another error code is not known to be harmless
    "[1@vm] Traceback (most recent call last):\n  File x\n",
    "stuck: rank 0: no answer within 0.001 s\n",
    "\n\nblank lines of their own stay\n",
    "no newline at the end",
    "x" * 100_000 + "\n",
])
def test_everything_else_passes_unchanged(text):
    assert filtered(text) == text


def test_only_one_blank_line_after_a_harmless_one_is_dropped():
    text = NBC.format(code=77, row=0) + "\n\nkept\n"
    assert filtered(text) == "\nkept\n"


EPOLL = ("[warn] Epoll ADD(4) on fd 18 failed. Old events were 0; read change was 0 (none); write change was 1 "
         "(add); close change was 0 (none): Bad file descriptor\n")


def test_libevents_epoll_warning_on_a_closed_socket_is_dropped():
    assert filtered("a\n" + EPOLL + "b\n") == "a\nb\n"


START_ROUND = "Error in NBC_Start_round() ({code})\n"


def test_a_failed_start_of_a_round_is_dropped():
    assert filtered("a\n" + START_ROUND.format(code=-1) + "b\n") == "a\nb\n"


@pytest.mark.parametrize("text", [START_ROUND.format(code=-2), START_ROUND.format(code=1),
                                  "x " + START_ROUND.format(code=-1), START_ROUND.format(code=-1).rstrip("\n")])
def test_other_start_round_lines_stay(text):
    assert filtered(text) == text


def test_other_libevent_warnings_stay():
    text = EPOLL.replace("Bad file descriptor", "Operation not permitted")
    assert filtered(text) == text
