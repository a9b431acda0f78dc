"""Code shared by several plugins: scores.py (normalisation, Go arithmetic), args.py (args
decoding and field errors)."""
