"""ResNet-18 (torchvision's layout: BasicBlocks of 64-128-256-512 channels) on small
CIFAR-shaped images, trained as the ImageNet example trains (pytorch/examples imagenet).

    .venv-torch/bin/python examples/torch/resnet18.py                      # local PyTorch
    TENSORD_ADDRESS=127.0.0.1:50051 .venv-torch/bin/python examples/torch/resnet18.py --device tensord

SGD with momentum and weight decay, MultiStepLR, cross_entropy, and top-1/top-5 accuracy
through ``topk``. Only the device line and the import differ from a CPU program.
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cpu")
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--batches", type=int, default=2)
parser.add_argument("--batch-size", type=int, default=8)
parser.add_argument("--size", type=int, default=32, help="image side")
args = parser.parse_args()
if args.device.startswith("tensord"):
    import tensord.torch  # noqa: F401  (the import: registers the device)
device = torch.device(args.device)  # the device line


class BasicBlock(nn.Module):
    def __init__(self, inplanes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=False),
                                            nn.BatchNorm2d(planes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = F.relu(self.bn1(self.conv1(x)), inplace=True)
        out = self.bn2(self.conv2(out))
        return F.relu(out + identity, inplace=True)


class ResNet18(nn.Module):
    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        layers, inplanes = [], 64
        for planes, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers.append(nn.Sequential(BasicBlock(inplanes, planes, stride),
                                        BasicBlock(planes, planes)))
            inplanes = planes
        self.layers = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
        x = self.avgpool(self.layers(x))
        return self.fc(torch.flatten(x, 1))


def accuracy(output: torch.Tensor, target: torch.Tensor, topk: tuple = (1,)) -> list:
    """The precision@k of the ImageNet example, for each k."""
    with torch.no_grad():
        maxk, batch_size = max(topk), target.size(0)
        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))
        return [correct[:k].reshape(-1).float().sum(0, keepdim=True).mul_(100.0 / batch_size)
                for k in topk]


g = torch.Generator().manual_seed(2)
n = args.batches * args.batch_size
dataset = TensorDataset(torch.randn(n, 3, args.size, args.size, generator=g),
                        torch.randint(0, 10, (n,), generator=g))
loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True,
                    generator=torch.Generator().manual_seed(3))
torch.manual_seed(1)
model = ResNet18().to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[1], gamma=0.1)
for epoch in range(args.epochs):
    model.train()
    for i, (images, target) in enumerate(loader):
        images, target = images.to(device), target.to(device)
        output = model(images)
        loss = criterion(output, target)
        acc1, acc5 = accuracy(output, target, topk=(1, 5))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"epoch {epoch} batch {i} loss {loss.item():.6f} "
              f"acc1 {acc1.item():.2f} acc5 {acc5.item():.2f}")
    scheduler.step()
    model.eval()
    with torch.no_grad():
        images, target = dataset.tensors
        output = model(images.to(device))
        acc1, acc5 = accuracy(output, target.to(device), topk=(1, 5))
        print(f"epoch {epoch} eval loss {criterion(output, target.to(device)).item():.6f} "
              f"acc1 {acc1.item():.2f} acc5 {acc5.item():.2f} lr {scheduler.get_last_lr()[0]:.4f}")
