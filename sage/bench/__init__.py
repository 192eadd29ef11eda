"""Tasks: loader, the npukernelbench suite, reference-time model, evaluation, runner, reports."""
