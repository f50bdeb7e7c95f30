from slfs.session.ids import MAX_ID, IdAllocator


def test_ids_count_up_from_one() -> None:
    ids = IdAllocator()
    assert [ids.allocate() for _ in range(3)] == [1, 2, 3]


def test_ids_wrap_below_2_31() -> None:
    ids = IdAllocator(start=MAX_ID - 1)
    assert ids.allocate() == MAX_ID - 1
    assert ids.allocate() == MAX_ID
    assert MAX_ID < 2**31
    assert ids.allocate() == 1


def test_ids_skip_pending() -> None:
    ids = IdAllocator(start=MAX_ID)
    assert ids.allocate({MAX_ID, 1, 2}) == 3
