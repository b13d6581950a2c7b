"""The real datasets the pipeline reads: their files, checksums and public sources.

Checksums are part of the package, so a download is verified even where the vendored copy
(``data/vendored/<name>/`` in the repository, with its README and ``SHA256SUMS``) is absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["DATASETS", "Dataset", "get_dataset"]


@dataclass(frozen=True)
class Dataset:
    """A dataset as a fixed set of files.

    Parameters
    ----------
    name
        Folder name below ``data/vendored/`` and ``data/raw/``.
    sha256
        SHA-256 of every file, by file name.
    md5
        Published MD5 values where the original distribution gives them (checked too).
    mirrors
        Public base URLs, tried in order after the vendored copy; a file's URL is the base
        URL followed by the file name.
    sizes
        Size of every file in bytes, by file name: a download is stopped once it exceeds
        it (the size cap), and its wall-clock deadline is scaled to it.
    """

    name: str
    sha256: Mapping[str, str]
    md5: Mapping[str, str] = field(default_factory=dict)
    mirrors: tuple[str, ...] = ()
    sizes: Mapping[str, int] = field(default_factory=dict)

    @property
    def files(self) -> list[str]:
        return sorted(self.sha256)


MNIST = Dataset(
    name="mnist",
    sha256={
        "t10k-images-idx3-ubyte.gz": "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
        "t10k-labels-idx1-ubyte.gz": "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
        "train-images-idx3-ubyte.gz": "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
        "train-labels-idx1-ubyte.gz": "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
    },
    # published with the original distribution at http://yann.lecun.com/exdb/mnist/
    md5={
        "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
        "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
        "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
        "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
    },
    sizes={
        "t10k-images-idx3-ubyte.gz": 1648877,
        "t10k-labels-idx1-ubyte.gz": 4542,
        "train-images-idx3-ubyte.gz": 9912422,
        "train-labels-idx1-ubyte.gz": 28881,
    },
    mirrors=(
        "https://ossci-datasets.s3.amazonaws.com/mnist/",
        "https://storage.googleapis.com/cvdf-datasets/mnist/",
        "http://yann.lecun.com/exdb/mnist/",
    ),
)

REVIEWS = Dataset(
    name="reviews",
    sha256={
        "MR.task.test": "82ec2a6d570978d173240dfd655c25e151761d7d0ace365725745a361e6fabea",
        "MR.task.train": "a6f222085a50061dd560c3beafc968679abae74683e3d18a66b619c5e2d178dc",
        "MR.task.unlabel": "fa9dee0e94afe5a6d58f1670ac7db53c450e0f806f158dea78fb766f1ee053bb",
        "apparel.task.test": "8e591ec14fa0e3d26837b9a40c99d3a93b49f47e7a3fbe4d0afe1b4e1dd45439",
        "apparel.task.train": "589702d71eded8ca23907acf6e434f203c8c6feb09737106f77f03707641ffc3",
        "apparel.task.unlabel": "7dc0cf126e07552b41d2574627a3a6d0d9c3f958a368fe5e41d8cd353b0f4a3f",
        "baby.task.test": "8763bb4b8bbf83b93b6aab03706719fc742fb7d89830a6bd95ea1c2490ea58f7",
        "baby.task.train": "0d884186f3aef0e12dafac0a875887fe631de0df992b15158ab177763882bf57",
        "baby.task.unlabel": "f4f2be61dddc8165ba40d9fc90d51a21c0c9d1f4b6eaa20c93fd3f9d9a8c95e2",
        "books.task.test": "b451ac03e48b599bf35dd1a450158389e1ac9018950e95c631053ac14a5b10ad",
        "books.task.train": "40c4c5971165b9e0a509a60472c3bf06c8e1430d4944833141eb3c34d986b65e",
        "books.task.unlabel": "5121a335a736523b5bd0dc47e05da2b085bf6f42aec2ca20ba7142d620241563",
        "camera_photo.task.test": "3fdea0837d6c41f04720dce8d2e690bbdeb5019ecac749f8f38472ac1dcfa439",
        "camera_photo.task.train": "425bf93c303b2f38d2f53649508ea9e55d0114679ecb00fda5c2c15ebbe9e708",
        "camera_photo.task.unlabel": "d94c682441e8b8a57ff992e244ef0137e07528cd9f3631874f89e2d40aefca04",
        "dvd.task.test": "762e6e030892375eda4f211be58624a3bb6a07c966901c79b803837d21fca4b5",
        "dvd.task.train": "47334240d9cef76ac5f15a10f9082c3d2c6e7f9a9bb0478a3800ede2a0300771",
        "dvd.task.unlabel": "5673c05efcefbf5d38a1ca7e1110cbf58a95e1b02a7a0c729c46f2ba21f223bf",
        "electronics.task.test": "a4d2e7d2a5b8b501a6611e45e1b241aa0d601388b79265cfc94c203cb52f8b8c",
        "electronics.task.train": "bb2f28c4a20e3d075dd71ff049970bd445f4d47bcc8404a68eb03850413a8da7",
        "electronics.task.unlabel": "da24efbec0053b8b8383e530dab3e4a358e75ae2e65d09624c6843bad30f69a8",
        "health_personal_care.task.test": "07f289177da7ebe71f1ac2ee3d5a25f190913e2a11116f0fb55862e01b60a331",
        "health_personal_care.task.train": "384f1ec3d76a2f755844cac4bd7725b86bc79910dae60fc33f133e380f827b4a",
        "health_personal_care.task.unlabel": "70bd1a5b004f2d0edc6bcf0ec6ff5c464f232a351bdcf4b88d4a655d97110355",
        "imdb.task.test": "dc708b7338157a6be56a1ded26abd97f82284d0e736876a6b833ad59e8a2cd53",
        "imdb.task.train": "16dd91ee7aebde130cfeb4d1c58bfe221ad87f1862fdb8ae694693eec3432caa",
        "imdb.task.unlabel": "ea4e02252cf95661af402ef7b7b6b9addc0a0666a03d8d7b81eefb08af0b413d",
        "kitchen_housewares.task.test": "86bcc015f7cfa773880951830ac6161dc2b8717e8a69773ca11a5bd6529b2020",
        "kitchen_housewares.task.train": "df5c9e8473b084a6b252dfbb5e074adcaacb9638a882fee3f20d62d747f45d6f",
        "kitchen_housewares.task.unlabel": "6255b3597385952d45920ce4451291a246ecd997ef75d964ff56fff9e31ad9e7",
        "magazines.task.test": "620ecd0ccd7b7f73483b8cdcef5ca07dff92e2d57c9cf4b6e9f7d669a681f6c3",
        "magazines.task.train": "d4805a9f094c1c7befa64bc42ea846261b1290a2fd120c46f45c9e89faf782ae",
        "magazines.task.unlabel": "87de41f73d65b525d2918833a944427196cd4a0346d9d083086b4814333fd9bd",
        "music.task.test": "54a157c56930b9e587b6b955fe4b2e3258d2f70d0d58ccbbf40a4bfd846ee204",
        "music.task.train": "f0b41243475c16391a02e91d87710ed87d68927d4d77f526a3d2369a98ac572e",
        "music.task.unlabel": "3f2ee8a5becb232368d2bc599ab131778558e05009f8f6957ce2a10106a6ea9a",
        "software.task.test": "3b92617a5b3ad618b7aaab98546d49c2a69f46dedbceb4ec14dee1cbb4ff02d3",
        "software.task.train": "a050cb3ea22b94b21ce70acff3a23eabd1f39307bd862d6c0cc23170eb4830f4",
        "software.task.unlabel": "a34c6f844ba0ac1a8d3325b396451c6b6f8928f219f22408192c417357497b80",
        "sports_outdoors.task.test": "77394d7c91fbc69cc16bfaf79f1f945999fe2d8e0fc536f1f79d17089e611f49",
        "sports_outdoors.task.train": "062ac0e2fb04a81c1f06f15b219634810a323a2ee187750e2f479030ebad0326",
        "sports_outdoors.task.unlabel": "7742f40a8b02cd5701a647d6ccaf3746bb863af28cdd6fa0404b507b131b9ca4",
        "toys_games.task.test": "6ee304a53f25697ee96bcb60fe07cc36d282ef343c3e0f8ae09df669ec39b116",
        "toys_games.task.train": "bb8404d3b48ab02bca2a75bb1e245297aac36b8143a81549f6485b4c2d24dd10",
        "toys_games.task.unlabel": "8808944481c5478a94f231f2fb9541036c5f882de225e2cb8357ab42fd59696d",
        "video.task.test": "8de7a49ee3001409c9049b1f52949d78c7875cb92e031b43f5cef681dfd341e4",
        "video.task.train": "2867b3e5fffc44132aa61ff49dd608eeacc503b2c9c2133680f0cb4a7a258f3e",
        "video.task.unlabel": "0178424fe97c0203c0f3cabcb31e1370bf656895b76a189ecf1ecfd151abe3f2",
    },
    sizes={
        "MR.task.test": 47573,
        "MR.task.train": 191447,
        "MR.task.unlabel": 229919,
        "apparel.task.test": 127187,
        "apparel.task.train": 519173,
        "apparel.task.unlabel": 572626,
        "baby.task.test": 220031,
        "baby.task.train": 849433,
        "baby.task.unlabel": 1054703,
        "books.task.test": 351857,
        "books.task.train": 1517583,
        "books.task.unlabel": 1816355,
        "camera_photo.task.test": 258814,
        "camera_photo.task.train": 1077961,
        "camera_photo.task.unlabel": 1481764,
        "dvd.task.test": 402497,
        "dvd.task.train": 1581172,
        "dvd.task.unlabel": 1957469,
        "electronics.task.test": 222978,
        "electronics.task.train": 918340,
        "electronics.task.unlabel": 1063574,
        "health_personal_care.task.test": 173498,
        "health_personal_care.task.train": 736321,
        "health_personal_care.task.unlabel": 834792,
        "imdb.task.test": 486414,
        "imdb.task.train": 2254776,
        "imdb.task.unlabel": 2860588,
        "kitchen_housewares.task.test": 193578,
        "kitchen_housewares.task.train": 762961,
        "kitchen_housewares.task.unlabel": 961543,
        "magazines.task.test": 263233,
        "magazines.task.train": 1027102,
        "magazines.task.unlabel": 1394818,
        "music.task.test": 275218,
        "music.task.train": 1170332,
        "music.task.unlabel": 1603351,
        "software.task.test": 270384,
        "software.task.train": 1137236,
        "software.task.unlabel": 330988,
        "sports_outdoors.task.test": 216957,
        "sports_outdoors.task.train": 827286,
        "sports_outdoors.task.unlabel": 981970,
        "toys_games.task.test": 194694,
        "toys_games.task.train": 785692,
        "toys_games.task.unlabel": 922984,
        "video.task.test": 341154,
        "video.task.train": 1304633,
        "video.task.unlabel": 1915737,
    },
    mirrors=(
        # Chen & Cardie's code release (NAACL 2018), byte-identical to the Fudan release
        "https://raw.githubusercontent.com/ccsasuke/man/b57b4c14340db1ca7bffb5d9737b7c2601dc8df2/data/fdu-mtl/",
        "https://raw.githubusercontent.com/m1ci/of-demo/4561cdc2124d6c4a3379bc77c568a1289ed1f502/data/mtl-dataset/",
    ),
)

DATASETS: dict[str, Dataset] = {d.name: d for d in (MNIST, REVIEWS)}


def get_dataset(name: str) -> Dataset:
    try:
        return DATASETS[name]
    except KeyError:
        raise KeyError(f"unknown dataset {name!r}; known: {', '.join(sorted(DATASETS))}") from None
