"""bench/peers/peer_models.py: the peer's network zoo, one row per network
Glassbox registers (nets/registry.cpp), with the same name, input, classes
and default batches, and REFERENCE.md's figures to check each definition by.

torchvision builds what it has (AlexNet, VGGs, GoogLeNet, InceptionV3,
ResNet-18..152); the rest are in peer_custom_models.py. Importing this module
does not import torch: the command line can answer --help and name errors
without it.
"""

from dataclasses import dataclass
from typing import Callable, Optional, Tuple


class DefinitionError(Exception):
    """A network whose definition disagrees with REFERENCE.md: nothing is timed."""


@dataclass(frozen=True)
class NetSpec:
    name: str
    sample: Tuple[int, int, int]  # (C, H, W) of one image
    classes: int
    gpu_batch: int  # default batches, as Glassbox's NetSpec (DESIGN.md section 5)
    cpu_batch: int
    params: int  # REFERENCE.md ("Cost and size per network"); LeNet: its layer table
    gmac: Optional[str]  # REFERENCE.md's forward GMAC at batch 1, as printed (the last digit sets the tolerance)
    build: Callable  # () -> torch.nn.Module on the current default device
    # torchvision's AdaptiveAvgPool2d of AlexNet and the VGGs is the identity at
    # 224 (its input is already 6x6 or 7x7) and Glassbox has no such layer, so
    # the peer replaces it by nn.Identity; count() checks it is the identity.
    identity_avgpool: bool = False

    def default_batch(self, device):
        return self.gpu_batch if device == "cuda" else self.cpu_batch


def _torchvision(builder_name, **options):
    def build():
        import torchvision
        return getattr(torchvision.models, builder_name)(weights=None, **options)
    return build


def _custom(builder_name):
    def build():
        import peer_custom_models
        return getattr(peer_custom_models, builder_name)()
    return build


_IMAGENET = (3, 224, 224)
_MNIST = (1, 28, 28)

NETS = [
    NetSpec("LeNet", _MNIST, 10, 256, 64, 61_706, None, _custom("lenet")),
    NetSpec("AlexNet", _IMAGENET, 1000, 128, 16, 61_100_840, "0.714", _torchvision("alexnet"),
            identity_avgpool=True),
    NetSpec("VGG11", _IMAGENET, 1000, 64, 2, 132_863_336, "7.609", _torchvision("vgg11"), identity_avgpool=True),
    NetSpec("VGG13", _IMAGENET, 1000, 64, 2, 133_047_848, "11.31", _torchvision("vgg13"), identity_avgpool=True),
    NetSpec("VGG16", _IMAGENET, 1000, 64, 2, 138_357_544, "15.470", _torchvision("vgg16"), identity_avgpool=True),
    NetSpec("VGG19", _IMAGENET, 1000, 64, 2, 143_667_240, "19.632", _torchvision("vgg19"), identity_avgpool=True),
    NetSpec("Overfeat", (3, 231, 231), 1000, 128, 8, 145_920_872, "2.801", _custom("overfeat")),
    NetSpec("GoogLeNet", _IMAGENET, 1000, 128, 16, 6_624_904, "1.498",
            _torchvision("googlenet", aux_logits=False, init_weights=False, transform_input=False)),
    NetSpec("InceptionV3", (3, 299, 299), 1000, 32, 4, 23_834_568, "5.713",
            _torchvision("inception_v3", aux_logits=False, init_weights=False, transform_input=False)),
    NetSpec("ResNet18", _IMAGENET, 1000, 64, 16, 11_689_512, "1.814", _torchvision("resnet18")),
    NetSpec("ResNet34", _IMAGENET, 1000, 64, 8, 21_797_672, "3.664", _torchvision("resnet34")),
    NetSpec("ResNet50", _IMAGENET, 1000, 64, 8, 25_557_032, "4.089", _torchvision("resnet50")),
    NetSpec("ResNet101", _IMAGENET, 1000, 32, 4, 44_549_160, "7.801", _torchvision("resnet101")),
    NetSpec("ResNet152", _IMAGENET, 1000, 32, 4, 60_192_808, "11.514", _torchvision("resnet152")),
    NetSpec("ResNet56", (3, 32, 32), 10, 128, 64, 853_018, "0.125", _custom("resnet56")),
    NetSpec("Xception", (3, 299, 299), 1000, 32, 2, 22_855_952, "8.357", _custom("xception")),
    NetSpec("FCN5", _MNIST, 10, 256, 64, 13_707_264, "0.0137", _custom("fcn5")),
]
NET_NAMES = [net.name for net in NETS]
_BY_LOWER_NAME = {net.name.lower(): net for net in NETS}


def find_net(name):
    """The NetSpec of `name` (any case), or None."""
    return _BY_LOWER_NAME.get(name.lower())


def build_for_timing(spec):
    """The network as it is timed: the spec's module, with torchvision's
    identity AdaptiveAvgPool2d dropped where it is one (see NetSpec)."""
    import torch.nn as nn
    model = spec.build()
    if spec.identity_avgpool:
        if not isinstance(getattr(model, "avgpool", None), nn.AdaptiveAvgPool2d):
            raise DefinitionError(f"{spec.name}: expected torchvision's AdaptiveAvgPool2d as .avgpool")
        model.avgpool = nn.Identity()
    return model


def count(spec):
    """(MACs per image of Conv2d and Linear layers, parameter count), counted
    with forward hooks on a meta-device copy (shapes only, no arithmetic)."""
    import torch
    import torch.nn as nn

    with torch.device("meta"):
        model = spec.build()
    model.eval()
    macs = 0

    def hook(module, inputs, output):
        nonlocal macs
        per_image = output.numel() // output.shape[0]
        if isinstance(module, nn.Conv2d):
            kh, kw = module.kernel_size
            macs += per_image * (module.in_channels // module.groups) * kh * kw
        elif isinstance(module, nn.Linear):
            macs += per_image * module.in_features

    def identity_pool_hook(module, inputs, output):
        if tuple(inputs[0].shape) != tuple(output.shape):
            raise DefinitionError(f"{spec.name}: AdaptiveAvgPool2d is not the identity here "
                                  f"({tuple(inputs[0].shape)} -> {tuple(output.shape)})")

    for module in model.modules():
        if isinstance(module, (nn.Conv2d, nn.Linear)):
            module.register_forward_hook(hook)
        elif spec.identity_avgpool and isinstance(module, nn.AdaptiveAvgPool2d):
            module.register_forward_hook(identity_pool_hook)
    with torch.no_grad():
        model(torch.empty((1,) + spec.sample, device="meta"))
    params = sum(p.numel() for p in model.parameters())
    return macs, params


def check_reference(spec, macs, params):
    """Raises DefinitionError where the parameter count is not REFERENCE.md's
    (a wrong definition must not be timed); returns warnings (for stderr)
    where the MACs do not round to its GMAC figure (counting conventions for
    the MACs may differ; a parameter count cannot)."""
    if params != spec.params:
        raise DefinitionError(f"{spec.name}: the peer's definition has {params:,} parameters, "
                              f"REFERENCE.md says {spec.params:,}")
    if spec.gmac is None:
        return []
    decimals = len(spec.gmac.split(".")[1]) if "." in spec.gmac else 0
    tolerance = 0.5 * 10 ** -decimals  # half a unit in the last printed digit
    gmac = macs / 1e9
    if abs(gmac - float(spec.gmac)) > tolerance:
        return [f"warning: {spec.name}: counted {gmac:.4f} GMAC per image, REFERENCE.md says {spec.gmac}"]
    return []
