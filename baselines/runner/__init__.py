"""What runs the tasks: the registry, fitting and evaluating models, results, model files, tuning, figures."""
