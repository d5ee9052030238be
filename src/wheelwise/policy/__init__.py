"""The byte-level rules every stage applies, one owner each.

* ``hashes``: which hash algorithms are checked, which are trusted, and the digest
  length of each.
* ``retry``: the retry policy and the one loop that applies it.

Imports nothing of wheelwise but its foundations.
"""
