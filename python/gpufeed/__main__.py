"""``python -m gpufeed``: prints the versions and what this build has (and why a part is not)."""

from ._build_info import describe_build

print(describe_build())
