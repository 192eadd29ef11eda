"""The offline synthesizer: library kernel templates over schedule knobs, no LLM needed."""
