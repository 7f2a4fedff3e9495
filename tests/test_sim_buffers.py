"""The simulated library's message specifications, datatypes and reduction operations (pure: no
simulated process), checked against what mpi4py does with the same specifications."""
from __future__ import annotations

import array

import numpy as np
import pytest

from mpibench.sim.buffers import TYPES, message
from mpibench.sim.ops import OPS, reduce_in_order


def test_a_buffer_alone_takes_its_own_element_type_and_length():
    for typecode, name in (("i", "INT"), ("d", "DOUBLE"), ("b", "SIGNED_CHAR"), ("H", "UNSIGNED_SHORT")):
        msg = message(array.array(typecode, [1, 2, 3]))
        assert msg.datatype is TYPES[name] and msg.count == 3
    assert message(np.zeros(4, np.complex128)).datatype is TYPES["C_DOUBLE_COMPLEX"]
    assert message(bytearray(5)).datatype is TYPES["UNSIGNED_CHAR"] and message(bytearray(5)).count == 5


def test_a_count_and_displacement_select_elements_of_the_callers_memory():
    buf = np.arange(10, dtype=np.int32)
    msg = message([buf, (3, 2), TYPES["INT"]])
    assert msg.read().tolist() == [2, 3, 4]
    msg.write(np.array([-1, -2, -3], np.int32))
    assert buf.tolist() == [0, 1, -1, -2, -3, 5, 6, 7, 8, 9]  # written in place, nothing else touched
    assert message([buf, 4, TYPES["INT"]]).view().tolist() == [0, 1, -1, -2]


def test_a_datatype_other_than_the_buffers_reinterprets_its_bytes():
    buf = np.zeros(2, np.float64)
    msg = message([buf, TYPES["INT"]])
    assert msg.count == 4  # 16 bytes of 4-byte ints
    msg.write(np.array([1, 0, 0, 0], np.int32))
    assert buf.view(np.int32)[0] == 1


def test_a_specification_that_does_not_fit_its_buffer_is_refused_as_mpi4py_refuses_it():
    with pytest.raises(ValueError):
        message([np.zeros(3, np.int32), 4, TYPES["INT"]])
    with pytest.raises(ValueError):
        message([np.zeros(3, np.int8), TYPES["INT"]])  # 3 bytes are no whole number of ints
    with pytest.raises(ValueError):
        message([np.zeros(3), 1, "not a datatype"])
    with pytest.raises(ValueError):
        message([np.zeros(3), 1, TYPES["DATATYPE_NULL"]])


def test_blocks_split_a_buffer_per_rank_and_a_count_given_is_per_block():
    buf = np.arange(12, dtype=np.int64)
    assert message(buf, blocks=3).count == 4
    assert message([buf, 2, TYPES["LONG"]], blocks=3).count == 2
    with pytest.raises(ValueError):
        message(np.arange(10, dtype=np.int64), blocks=3)


def test_an_indexed_block_datatype_reads_and_writes_only_its_elements():
    buf = np.arange(10, dtype=np.float32)
    every_other = TYPES["FLOAT"].Create_indexed_block(1, list(range(1, 10, 2))).Commit()
    msg = message([buf, 1, every_other])
    assert msg.read().tolist() == [1, 3, 5, 7, 9]
    msg.write(np.full(5, -1, np.float32))
    assert buf.tolist() == [0, -1, 2, -1, 4, -1, 6, -1, 8, -1]
    assert every_other.Get_size() == 20 and every_other.Get_extent() == (4, 36)


def test_reductions_combine_in_the_element_type_left_to_right():
    values = [np.array([1, 5, -3], np.int16), np.array([4, 2, 7], np.int16), np.array([2, 2, 2], np.int16)]
    assert reduce_in_order(values, OPS["SUM"]).tolist() == [7, 9, 6]
    assert reduce_in_order(values, OPS["PROD"]).tolist() == [8, 20, -42]
    assert reduce_in_order(values, OPS["MAX"]).tolist() == [4, 5, 7]
    assert reduce_in_order(values, OPS["MIN"]).tolist() == [1, 2, -3]
    assert reduce_in_order([np.array([200], np.uint8), np.array([100], np.uint8)], "sum").tolist() == [44]  # wraps
    assert OPS["SUM"] == "sum" and OPS["MAX"] == "max"  # code comparing with the names keeps working


def test_reduce_local_checks_its_messages_before_combining():
    src, dst = np.array([1, 2, 3], np.int32), np.array([10, 20, 30], np.int32)
    OPS["SUM"].Reduce_local(src, dst)
    assert dst.tolist() == [11, 22, 33] and src.tolist() == [1, 2, 3]
    with pytest.raises(ValueError):
        OPS["SUM"].Reduce_local([src, 2, TYPES["INT"]], [dst, 3, TYPES["INT"]])
    with pytest.raises(ValueError):
        OPS["SUM"].Reduce_local([src, 1, TYPES["INT"]], [dst, 1, TYPES["SHORT"]])
