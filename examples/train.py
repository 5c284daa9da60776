"""A small training script with the three device bugs devlint exists for."""
import torch
import torch.nn as nn

model = nn.Linear(4, 2).cuda()
model.load_state_dict(torch.load("checkpoint.pt"))

inputs = torch.randn(8, 4)
inputs.to("cuda")
outputs = model(inputs)
