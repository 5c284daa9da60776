"""One map from LibCST's rendering to the file's offsets (devlint.rendering): where a position of
LibCST's is in the text, or None where the rendering of its lines is not the text's."""

from __future__ import annotations

import pytest

from devlint.model import Position as P
from devlint.rendering import Rendering, position_at
from tests.helpers import fix

DEVICE = 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")'


def test_positions_go_past_the_form_feeds_the_rendering_dropped():
    rendering = Rendering("a = 1\n\f\fx = y\n", "a = 1\nx = y\n")
    assert rendering.span(P(2, 4), P(2, 5)) == (12, 13)  # `y`
    assert rendering.span(P(2, 0), P(2, 0)) == (8, 8)  # an insertion: after the form feeds
    assert rendering.span(P(1, 0), P(2, 0)) == (0, 6)  # a range ending at a line start: before them
    assert rendering.before(P(2, 0)) == 6


def test_a_form_feed_the_rendering_repeats_is_skipped():
    rendering = Rendering("if x:\n\f    a\n    b\n", "if x:\n\f    a\n\f    b\n")
    assert rendering.span(P(3, 5), P(3, 6)) == (17, 18)  # `b`, one column left of LibCST's


def test_a_line_rendered_otherwise_is_unmappable_and_the_lines_below_still_map():
    rendering = Rendering("try:\n    pass\nexcept (E) :\n    pass\nx = 1\n",
                          "try:\n    pass\nexcept (E):\n    pass\nx = 1\n")
    assert rendering.span(P(3, 0), P(3, 6)) is None
    assert rendering.span(P(5, 4), P(5, 5)) == (40, 41)
    assert rendering.before(P(5, 0)) == 36  # a line start below a line of the same number
    assert rendering.before(P(3, 3)) is None


def test_a_lost_last_line_leaves_the_lines_above_mappable():
    rendering = Rendering("x = 1\n   ", "x = 1\n")
    assert rendering.span(P(1, 4), P(1, 5)) == (4, 5)
    assert position_at("x = 1\ny = 2\n", 8) == P(2, 2)


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_a_dropped_form_feed_in_a_file_rendered_otherwise_too_is_fixed_in_place(newline):
    # Positions on the form feed's line were once taken as the text's there: the edit landed a column
    # off and the next pass could not parse the file (it was reported as skipped).
    source = newline.join(["import torch", "\fx = torch.zeros(1).cuda()", "try:", "    pass",
                           "except (E) :", "    pass", "   "])
    # (the base tree raised LibCST's "unmatched ')'" here: its edit had cut the line a column off)
    assert fix(source, select="DL001").split(newline) == [
        "import torch", "", DEVICE, "\fx = torch.zeros(1).to(device)", "try:", "    pass", "except (E) :",
        "    pass", "   "]


def test_a_definition_goes_below_an_import_in_a_cr_file_whose_last_newline_is_not_rendered():
    # A CR-only file's insertion point is not at a line start; its line was refused unless the
    # rendering differed in form feeds only.
    fixed = fix("\fimport numpy\r\fx = numpy.ones(1)\ry = torch.load(p)\r", select="DL002", unsafe=True)
    assert fixed == ("\fimport numpy\rimport torch\r\r" + DEVICE + "\r\fx = numpy.ones(1)\r"
                     "y = torch.load(p, map_location=device)\r")


def test_a_fix_on_a_line_whose_form_feed_libcst_repeats_is_applied():
    # LibCST renders the block's first form feed on `return t.cuda()` too: the fix was display-only.
    source = "import torch\ndef f(a, b):\n\f    t = a\n    return t.cuda()\n"
    assert fix(source, select="DL001") == ("import torch\ndef f(a, b):\n\f    t = a\n    " + DEVICE
                                           + "\n    return t.to(device)\n")
