"""Semantics found missing by the unseen batch S (tests/fixtures/engine/unseen/s_*: library objects), each
tested on the variations a user writes (renamed, split into files, one helper deeper, inside a class) and
on the neighbours that must stay silent:
- `nn.Sequential(*list(model.children())[:-1])`: the submodules of a model on one known device sit there
  too, so the feature extractor built from them is on that device; `models.__dict__["resnet18"]` is the
  namespace's attribute of that name;
- transformers' `Trainer(model=model, ...)` moves the model onto `args.device` as it is built (knowledge:
  `hf_trainer.places_in_init`), and `trainer.model` is that model;
- `model(**{k: v.to(d) for k, v in enc.items()})`: every value spread is such a tensor;
- torchaudio's transforms hold buffers from construction (knowledge: `stateful_library_modules`): built
  on the cpu, fed device tensors without `.to()`, they fail like a model left on the cpu."""

from __future__ import annotations

from project_fixtures import codes as _codes, write_project as _project


# ---- a feature extractor cut from a model's children
def test_children_sequential_of_a_cuda_backbone_fed_a_cpu_image(tmp_path):
    _project(tmp_path, {"feats.py": """
        import torch
        import torch.nn as nn
        from torchvision import models

        net = models.resnet50(weights=None).cuda().eval()
        trunk = nn.Sequential(*list(net.children())[:-2])
        img = torch.rand(1, 3, 224, 224)
        out = trunk(img)
    """})
    assert _codes(tmp_path, "feats.py") == [(7, "DEV201")]


def test_children_sequential_split_into_files_one_helper_deeper_in_a_class(tmp_path):
    _project(tmp_path, {"backbones.py": """
        import torch
        from torchvision import models


        def load_backbone(name, ckpt):
            model = models.__dict__[name](pretrained=False)
            model.load_state_dict(torch.load(ckpt, map_location="cpu"))
            return model.to("cuda")
    """, "encoder.py": """
        import torch.nn as nn
        import torchvision.transforms as T
        from backbones import load_backbone


        def headless(model):
            return nn.Sequential(*list(model.children())[:-1])


        class PatchEncoder:
            def __init__(self, ckpt):
                self.body = headless(load_backbone("resnet18", ckpt))
                self.tf = T.ToTensor()

            def encode(self, img):
                x = self.tf(img).unsqueeze(0)
                return self.body(x).flatten(1)
    """, "run.py": """
        from PIL import Image
        from encoder import PatchEncoder

        enc = PatchEncoder("w.pt")
        print(enc.encode(Image.open("a.png")))
    """})
    assert _codes(tmp_path, "encoder.py") == [(16, "DEV202")]


def test_children_sequential_silent_when_devices_agree_or_are_unknown(tmp_path):
    _project(tmp_path, {"ok.py": """
        import torch
        import torch.nn as nn
        from torchvision import models


        def on_cpu(x):
            trunk = nn.Sequential(*list(models.resnet18().children())[:-1])
            return trunk(x)


        def both_moved(device):
            net = models.resnet18().to(device)
            trunk = nn.Sequential(*list(net.children())[:-1])
            return trunk(torch.rand(1, 3, 64, 64).to(device))


        def part_moved_alone():
            net = models.resnet18()
            net.fc = nn.Linear(512, 10).cuda()
            trunk = nn.Sequential(*list(net.children()))
            return trunk(torch.rand(1, 3, 64, 64).cuda())


        def from_caller(net, x):
            return nn.Sequential(*list(net.children())[:-1])(x)
    """})
    assert _codes(tmp_path, "ok.py") == []


# ---- transformers' Trainer moves the model it is given
def test_trainer_moves_the_model_then_a_cpu_encoding_meets_it(tmp_path):
    _project(tmp_path, {"train.py": """
        from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments

        tok = AutoTokenizer.from_pretrained("bert-base-uncased")
        clf = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)
        trainer = Trainer(clf, TrainingArguments(output_dir="out"), train_dataset=None)
        trainer.train()


        def predict(text):
            enc = tok(text, return_tensors="pt")
            return clf(**enc).logits.argmax(-1)
    """})
    assert _codes(tmp_path, "train.py") == [(10, "DEV202")]


def test_reloaded_model_fed_inputs_moved_to_the_trainers_model_device(tmp_path):
    _project(tmp_path, {"fit.py": """
        from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments


        def fit(name, data):
            model = AutoModelForSequenceClassification.from_pretrained(name)
            trainer = Trainer(model=model, args=TrainingArguments(output_dir="out"), train_dataset=data)
            trainer.train()
            trainer.save_model("best")
            return trainer
    """, "predict.py": """
        from transformers import AutoModelForSequenceClassification, AutoTokenizer
        from fit import fit


        class Predictor:
            def __init__(self, data):
                self.trainer = fit("bert-base-uncased", data)
                self.model = AutoModelForSequenceClassification.from_pretrained("best")
                self.tok = AutoTokenizer.from_pretrained("best")

            def __call__(self, text):
                enc = self.tok(text, return_tensors="pt")
                enc = {k: v.to(self.trainer.model.device) for k, v in enc.items()}
                return self.model(**enc)


        predictor = Predictor(None)
        print(predictor("a fine day"))
    """})
    assert _codes(tmp_path, "predict.py") == [(14, "DEV106")]


def test_trainer_silent_when_inputs_follow_the_model_or_it_is_dispatched(tmp_path):
    _project(tmp_path, {"ok.py": """
        from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments

        tok = AutoTokenizer.from_pretrained("gpt2")


        def moved_inputs():
            model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
            trainer = Trainer(model=model, args=TrainingArguments(output_dir="o"))
            trainer.train()
            enc = {k: v.to(trainer.model.device) for k, v in tok("hi", return_tensors="pt").items()}
            return model(**enc)


        def dispatched():
            model = AutoModelForCausalLM.from_pretrained("gpt2", device_map="auto")
            Trainer(model=model, args=TrainingArguments(output_dir="o")).train()
            return model.generate(**tok("hi", return_tensors="pt").to(model.device))


        def reloaded_on_cpu():
            model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
            Trainer(model=model, args=TrainingArguments(output_dir="o")).train()
            again = AutoModelForSequenceClassification.from_pretrained("o")
            return again(**tok("hi", return_tensors="pt"))
    """})
    assert _codes(tmp_path, "ok.py") == []


# ---- torchaudio's transforms hold buffers
def test_torchaudio_transform_left_on_cpu_fed_a_cuda_waveform(tmp_path):
    _project(tmp_path, {"feats.py": """
        import torch
        import torchaudio

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        to_mel = torchaudio.transforms.MelSpectrogram(sample_rate=16000, n_mels=80)
        wav = torch.randn(1, 16000).to(device)
        mel = to_mel(wav)
    """})
    assert _codes(tmp_path, "feats.py") == [(7, "DEV106")]


def test_torchaudio_transform_in_a_helper_class_split_into_files(tmp_path):
    _project(tmp_path, {"audio/features.py": """
        from torchaudio.transforms import MFCC


        class Featurizer:
            def __init__(self, sr):
                self.mfcc = MFCC(sample_rate=sr, n_mfcc=40)

            def __call__(self, wav):
                return self.mfcc(wav)
    """, "audio/__init__.py": "", "train.py": """
        import torch
        from audio.features import Featurizer

        feat = Featurizer(16000)


        def featurize(wav, device="cuda"):
            return feat(wav.to(device))


        print(featurize(torch.randn(1, 16000)))
    """})
    assert _codes(tmp_path, "train.py") == [(8, "DEV106")]


def test_torchaudio_transform_silent_when_moved_registered_or_on_cpu(tmp_path):
    _project(tmp_path, {"ok.py": """
        import torch
        import torch.nn as nn
        import torchaudio


        class Frontend(nn.Module):
            def __init__(self):
                super().__init__()
                self.mel = torchaudio.transforms.MelSpectrogram(sample_rate=16000)
                self.proj = nn.Linear(128, 64)

            def forward(self, wav):
                return self.proj(self.mel(wav).transpose(1, 2))


        def registered(wav):
            net = Frontend().cuda()
            return net(wav.cuda())


        def moved(wav, device):
            mel = torchaudio.transforms.MelSpectrogram(sample_rate=16000).to(device)
            return mel(wav.to(device))


        def cpu_only(path):
            wav, sr = torchaudio.load(path)
            return torchaudio.transforms.Resample(sr, 16000)(wav)
    """})
    assert _codes(tmp_path, "ok.py") == []


# ---- library models' methods that run the model (knowledge: module_input_methods)
def test_clip_features_and_vae_encode_with_cpu_inputs(tmp_path):
    _project(tmp_path, {"embed.py": """
        import numpy as np
        import torch
        from diffusers import AutoencoderKL
        from transformers import CLIPModel, CLIPProcessor

        device = "cuda"
        clip = CLIPModel.from_pretrained("openai/clip-vit-base-patch32").to(device)
        processor = CLIPProcessor.from_pretrained("openai/clip-vit-base-patch32")
        vae = AutoencoderKL.from_pretrained("stabilityai/sd-vae-ft-mse").to(device)


        def embed_text(texts):
            inputs = processor(text=texts, return_tensors="pt", padding=True)
            return clip.get_text_features(**inputs)


        def latents_of(images):
            x = torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2).float() / 127.5 - 1
            return vae.encode(x).latent_dist.sample() * 0.18215
    """})
    assert _codes(tmp_path, "embed.py") == [(13, "DEV202"), (18, "DEV202")]


def test_library_model_methods_silent_when_inputs_follow_the_model(tmp_path):
    _project(tmp_path, {"ok.py": """
        import torch
        from diffusers import AutoencoderKL
        from transformers import CLIPModel, CLIPProcessor


        class Embedder:
            def __init__(self, device):
                self.device = device
                self.clip = CLIPModel.from_pretrained("openai/clip-vit-base-patch32").to(device)
                self.processor = CLIPProcessor.from_pretrained("openai/clip-vit-base-patch32")

            def text(self, texts):
                inputs = self.processor(text=texts, return_tensors="pt", padding=True).to(self.device)
                return self.clip.get_text_features(**inputs)


        def decode_on_cpu(latents):
            vae = AutoencoderKL.from_pretrained("stabilityai/sd-vae-ft-mse")
            return vae.decode(latents / 0.18215).sample


        def decode_moved(latents, device):
            vae = AutoencoderKL.from_pretrained("stabilityai/sd-vae-ft-mse").to(device)
            return vae.decode(latents.to(device)).sample
    """})
    assert _codes(tmp_path, "ok.py") == []
