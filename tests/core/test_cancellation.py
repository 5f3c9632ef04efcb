"""core/cancellation.py: what a cancel from another thread does to the work it cancels."""
import pytest

from core.cancellation import Cancellation, Cancelled, cancellable, check_cancelled, stoppable


def test_a_cancel_stops_what_the_work_is_blocked_on_once_and_the_block_raises_cancelled():
    stopped = []
    cancellation = Cancellation()
    with cancellable(cancellation), pytest.raises(Cancelled, match="cancelled by ada"):
        with stoppable(lambda: stopped.append("stopped")):
            cancellation.cancel("cancelled by ada")  # as the heartbeat's thread would
            cancellation.cancel("cancelled by bob")  # a second cancel does nothing
    assert stopped == ["stopped"] and cancellation.reason == "cancelled by ada"


def test_what_a_stopped_call_raises_becomes_cancelled_and_other_failures_stay_theirs():
    cancellation = Cancellation()
    with cancellable(cancellation):
        with pytest.raises(ValueError):
            with stoppable(lambda: None):
                raise ValueError("the call's own failure")
        with pytest.raises(Cancelled) as caught:
            with stoppable(lambda: None):
                cancellation.cancel("cancelled by ada")
                raise OSError("the socket was shut")
    assert isinstance(caught.value.__cause__, OSError)


def test_work_cancelled_before_it_blocks_is_stopped_at_once_and_starts_no_call():
    stopped = []
    cancellation = Cancellation()
    cancellation.cancel("cancelled by ada")
    with cancellable(cancellation):
        with pytest.raises(Cancelled):
            check_cancelled()
        with pytest.raises(Cancelled), stoppable(lambda: stopped.append("at once")):
            pass
    assert stopped == ["at once"]


def test_a_stop_registered_no_longer_is_not_called_and_nothing_happens_without_a_cancellation():
    stopped = []
    cancellation = Cancellation()
    with cancellable(cancellation):
        with stoppable(lambda: stopped.append("late")):
            pass
    cancellation.cancel("cancelled by ada")
    assert stopped == []
    with stoppable(lambda: stopped.append("never")):  # no cancellation open: a preview, the judge
        check_cancelled()
    assert stopped == []
