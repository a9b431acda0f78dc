"""DRA differential testing: upstream's allocator as an oracle, and seeded random cases for it."""
