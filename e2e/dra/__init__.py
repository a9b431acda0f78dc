"""DRA in the e2e suite: upstream's allocator as an oracle with seeded random cases, the test DRA
driver publishing devices, and the resource.k8s.io objects the DRA tests share."""
