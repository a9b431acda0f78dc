"""The two shapes API JSON has in this code base, named once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: An API object (or request body) as decoded JSON, held or built by the client layer.
Json = dict[str, Any]

#: Read-only API JSON, what the parsers of the object model accept.
JsonView = Mapping[str, Any]
