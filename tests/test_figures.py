from arcengine.domain.figures import times


def test_a_small_ratio_keeps_two_significant_digits_and_others_two_decimals() -> None:
    assert times(0.0042) == "0.0042x"
    assert times(0.00012345) == "0.00012x"
    assert times(1.5407) == "1.54x"
    assert times(27.6449) == "27.64x"
    assert times(0.0) == "0.00x"
