"""The agent: LLM backends, prompts, the synthesis loop and the offline synthesizer."""
