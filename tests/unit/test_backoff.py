from slfs.backoff import Backoff


def test_doubles_to_the_cap_with_jitter_and_resets() -> None:
    b = Backoff(0.5, 4.0)
    bounds = [(0.25, 0.5), (0.5, 1.0), (1.0, 2.0), (2.0, 4.0), (2.0, 4.0)]
    for low, high in bounds:
        assert low <= b.delay() <= high
    b.reset()
    assert 0.25 <= b.delay() <= 0.5
