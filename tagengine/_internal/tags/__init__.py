"""Tags: scan a reply, parse each candidate with Lark, write receipts back, hide tags from narration."""

from .model import RESULT_KEYS, Found, Tag, quote
from .parse import Malformed, parse
from .render import canonical, narration
from .scan import found_in, scan

__all__ = ["RESULT_KEYS", "Found", "Malformed", "Tag", "canonical", "found_in", "narration", "parse", "quote", "scan"]
