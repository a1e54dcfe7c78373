"""What every model is built from: the TaskModel base, parameter constraints, the logistic regression, explanations."""
