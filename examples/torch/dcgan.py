"""The PyTorch DCGAN example's shape (pytorch/examples dcgan/main.py) on 16x16 synthetic images.

    .venv-torch/bin/python examples/torch/dcgan.py                      # local PyTorch
    TENSORD_ADDRESS=127.0.0.1:50051 .venv-torch/bin/python examples/torch/dcgan.py --device tensord

A generator of ConvTranspose2d + BatchNorm2d + ReLU ending in Tanh, a discriminator of Conv2d +
BatchNorm2d + LeakyReLU ending in Sigmoid, the DCGAN weight init, BCELoss, one Adam each, and
the example's two updates per batch (D on real and ``fake.detach()``, then G). Only the device
line and the import differ from a CPU program.

Random numbers come from the CPU, as in a program that wants the same run on every device: the
weights are initialised before ``.to(device)`` and the noise is drawn on the CPU and moved (on
the tensord device ``randn``/``normal_`` draw from the daemon's generator, not PyTorch's).
"""

import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cpu")
parser.add_argument("--batches", type=int, default=3)
parser.add_argument("--batch-size", type=int, default=8)
args = parser.parse_args()
if args.device.startswith("tensord"):
    import tensord.torch  # noqa: F401  (the import: registers the device)
device = torch.device(args.device)  # the device line

nz, ngf, ndf, nc = 16, 8, 8, 1


def weights_init(m: nn.Module) -> None:
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        torch.nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        torch.nn.init.normal_(m.weight, 1.0, 0.02)
        torch.nn.init.zeros_(m.bias)


class Generator(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False),  # 4x4
            nn.BatchNorm2d(ngf * 4), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),  # 8x8
            nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False),  # 16x16
            nn.Tanh())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.main(x)


class Discriminator(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),  # 8x8
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),  # 4x4
            nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),  # 1x1
            nn.Sigmoid())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.main(x).view(-1, 1).squeeze(1)


torch.manual_seed(1)
netG, netD = Generator(), Discriminator()
netG.apply(weights_init)
netD.apply(weights_init)
netG, netD = netG.to(device), netD.to(device)
criterion = nn.BCELoss()
optimizerD = torch.optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
optimizerG = torch.optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
g = torch.Generator().manual_seed(2)
real_images = torch.rand(args.batches * args.batch_size, nc, 16, 16, generator=g) * 2 - 1
dataloader = DataLoader(TensorDataset(real_images), batch_size=args.batch_size, shuffle=True,
                        generator=torch.Generator().manual_seed(3))
real_label, fake_label = 1.0, 0.0
for i, (data,) in enumerate(dataloader):
    # (1) Update D: maximize log(D(x)) + log(1 - D(G(z)))
    netD.zero_grad()
    real_cpu = data.to(device)
    batch_size = real_cpu.size(0)
    label = torch.full((batch_size,), real_label, dtype=real_cpu.dtype, device=device)
    output = netD(real_cpu)
    errD_real = criterion(output, label)
    errD_real.backward()
    D_x = output.mean().item()
    noise = torch.randn(batch_size, nz, 1, 1, generator=g).to(device)
    fake = netG(noise)
    label.fill_(fake_label)
    output = netD(fake.detach())
    errD_fake = criterion(output, label)
    errD_fake.backward()
    D_G_z1 = output.mean().item()
    errD = errD_real + errD_fake
    optimizerD.step()
    # (2) Update G: maximize log(D(G(z)))
    netG.zero_grad()
    label.fill_(real_label)
    output = netD(fake)
    errG = criterion(output, label)
    errG.backward()
    D_G_z2 = output.mean().item()
    optimizerG.step()
    print(f"batch {i} loss_D {errD.item():.6f} loss_G {errG.item():.6f} "
          f"D_x {D_x:.6f} D_G_z {D_G_z1:.6f} {D_G_z2:.6f}")
