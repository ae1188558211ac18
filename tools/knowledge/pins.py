"""The package versions the knowledge tables are generated from (printed in each generated file).

torch is the installed one (the CPU build the project pins, TORCH_SPEC in the Makefile); the
libraries that cannot be installed next to it here are read from these released wheels.
timm is read twice: 1.0.31 rebuilds classifier heads on the old head's device, 1.0.15 on the cpu.
"""

TORCH = "2.13.0"
LIBRARIES = {
    "timm": ["1.0.31", "1.0.15"],
    "torchvision": ["0.29.1"],
    "transformers": ["5.23.0"],
    "peft": ["0.21.2"],
    "accelerate": ["1.15.0"],
    "safetensors": ["0.8.0"],
    "diffusers": ["0.42.1"],
    # PyTorchModelHubMixin: project models load with `MyNet.from_pretrained(...)` (instance_constructors)
    "huggingface_hub": ["2.4.0"],
    # functions creating tensors on their `device` parameter (device_factories): kornia.create_meshgrid ...
    "kornia": ["0.9.0"],
}
# Metric libraries (frameworks.json `metrics`, ast scan): their metric classes, the methods registering a metric's
# states and those syncing them over a process group. Read twice: 0.6 still has the names 0.7 renamed (`F1`).
METRIC_LIBRARIES = {"torchmetrics": ["1.9.0", "0.6.2"]}
# Lightning releases whose loops' LightningModule hooks are listed (frameworks.json lightning.loop_hooks): 1.x still
# calls the `*_epoch_end(outputs)` hooks 2.x removed. distribution -> (package, version).
LIGHTNING_LOOPS = {"pytorch_lightning": ("pytorch_lightning", "1.9.5")}
# Frameworks read only for frameworks.json (Lightning's hooks around its batch transfer).
FRAMEWORKS = {"lightning": "2.6.6"}
# Libraries between the user's tensors, read only for frameworks.json: einops (pure Python, imported
# from its wheel and probed on meta), tiktoken (ast scan of its wheel's annotations).
# Model libraries whose nn.Module classes users subclass (`class CNN(ResNet)`): listed in frameworks.json.
MODEL_LIBRARIES = ("torchvision", "timm")
# Libraries whose module classes hold buffers / parameters from construction (frameworks.json, ast scan):
# built on the cpu, they must be moved like a model (torchaudio's transforms: windows, filterbanks;
# torch_geometric's layers; lpips' perceptual loss; open_clip's models): distribution -> (package, version).
STATEFUL_MODULE_LIBRARIES = {"torchaudio": ("torchaudio", "2.11.0"), "torch_geometric": ("torch_geometric", "2.8.0.post1"),
                             "lpips": ("lpips", "0.1.4"), "open_clip_torch": ("open_clip", "3.3.0"),
                             "dgl": ("dgl", "2.1.0")}
# Libraries whose models users call through methods other than forward (`model.get_text_features(ids)`,
# `vae.encode(x)`, timm's `model.forward_features(x)`): the public methods that run the model's submodules
# on their arguments (frameworks.json).
# Libraries whose functions build models, preprocessing and tokenizers users then place and feed
# (`open_clip.create_model_and_transforms`, `whisper.load_model`, `sam_model_registry[...]`): frameworks.json
# `library_factories`, ast scan; distribution -> (package, version). encodec, openai-whisper and openai-clip
# publish only sdists (read the same way). torchvision: its readers (`torchvision.io.read_image` gives a cpu tensor).
# dgl: its graphs, whose `.to()` returns a moved copy (`dgl.graph(data)`, `dgl.batch(graphs)`). torchaudio: its
# loaders (`torchaudio.load(path)` gives the audio as a cpu tensor and its sample rate).
FACTORY_LIBRARIES = {"open_clip_torch": ("open_clip", "3.3.0"), "segment_anything": ("segment_anything", "1.0"),
                     "encodec": ("encodec", "0.1.1"), "openai-whisper": ("whisper", "20250625"),
                     "openai-clip": ("clip", "1.0.1"), "torchvision": ("torchvision", LIBRARIES["torchvision"][0]),
                     "dgl": ("dgl", "2.1.0"), "torchaudio": STATEFUL_MODULE_LIBRARIES["torchaudio"]}
INPUT_METHOD_LIBRARIES = ("transformers", "diffusers", "timm", "torchvision")
TENSOR_LIBRARIES = {"einops": "0.8.2", "tiktoken": "0.14.0"}
# Batch iterators taking device= (frameworks.json): torchtext's legacy data API, as it was before
# (0.6.0, torchtext.data) and after (0.11.2, torchtext.legacy.data) its move. 0.11.2 has no wheel for
# this Python; its wheel for another is read (the data API is pure Python, scanned, never imported).
BATCH_ITERATORS = {"torchtext": ["0.11.2", "0.6.0"]}
WHEEL_FOR = {("torchtext", "0.11.2"): ["--only-binary=:all:", "--python-version", "3.9", "--platform", "manylinux1_x86_64"]}
# Libraries whose DataLoader subclasses collate a dataset like torch's (frameworks.json, ast scan).
DATASET_LOADERS = {"torch_geometric": "2.8.0.post1"}
# Packages read only to learn that none of their modules imports torch (what they return is host data: images
# and audio read from files, PIL / scikit-image / OpenCV / imageio / soundfile / librosa):
# distribution -> (import name, version).
HOST_PACKAGES = {"pillow": ("PIL", "11.3.0"), "scikit-image": ("skimage", "0.25.2"),
                 "opencv-python-headless": ("cv2", "4.12.0.88"), "imageio": ("imageio", "2.37.0"),
                 "soundfile": ("soundfile", "0.13.1"), "librosa": ("librosa", "0.11.0")}
# Config libraries whose objects are dicts read and written as attributes (frameworks.json, ast scan):
# distribution -> (package, version).
CONFIG_LIBRARIES = {"yacs": ("yacs", "0.1.8"), "easydict": ("easydict", "1.13"), "addict": ("addict", "2.4.0")}
# Progress bars that wrap the iterable they are given and yield its elements (`for batch in tqdm(loader)`):
# frameworks.json, ast scan of the wheel.
ITERABLE_WRAPPERS = {"tqdm": "4.67.1"}
