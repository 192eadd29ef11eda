"""The agent: LLM backends, prompts, the synthesis loop and the offline synthesizer.

    from sage.agent import AgentConfig, synthesize, make_backend
    result = synthesize(task, make_backend(settings, task), memory, AgentConfig())
"""

from sage.agent.factory import make_backend
from sage.agent.loop import AgentConfig, ReferenceProblem, synthesize
from sage.agent.records import SynthesisResult, Turn

__all__ = ["AgentConfig", "ReferenceProblem", "SynthesisResult", "Turn", "make_backend", "synthesize"]
