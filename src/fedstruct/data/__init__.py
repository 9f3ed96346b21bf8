"""Data sets, samplers, synthetic generators and partitioners (bottom layer): generic only.

Everything here works offline: the benchmark networks are read from files that ship
inside installed packages, and the synthetic data are generated. Real data that ship
with a package, and readers of standard files a user already has, are in
:mod:`fedstruct.data.datasets`. A paper's own way of building its clients lives in
that method's run, ``fedstruct.methods.<method>.sources``.
"""

from fedstruct.data.client import OBSERVATIONAL, ClientData, ClientsOnDemand, check_federation
from fedstruct.data.discrete import UNIFORM, DiscreteNetwork
from fedstruct.data.formats import IMAGES, TABLES, SiteFormat, SiteOptions
from fedstruct.data.graph_files import read_graph_file
from fedstruct.data.images import (
    LABEL,
    ImageFederationSchema,
    ImageSet,
    ImageSite,
    ImageSiteSchema,
    from_rows,
    image_client,
    merge_image_schemas,
    read_image_folder,
    read_image_npz,
    read_image_site,
    to_rows,
)
from fedstruct.data.mixed import MixedDataset, MixedSCM, make_mixed_data
from fedstruct.data.networks import NetworkInfo, list_networks, load_network, network_names
from fedstruct.data.partition import (
    LabelSkewSplit,
    Sampler,
    client_names,
    horizontal,
    label_skew,
    long_tail_counts,
)
from fedstruct.data.schedule import Schedule
from fedstruct.data.scm import CategoricalSCM, random_discrete_network
from fedstruct.data.sites import (
    KINDS,
    ColumnSchema,
    EncodedSite,
    FederationSchema,
    Manifest,
    SiteFederation,
    SiteSchema,
    SiteSpec,
    encode_site,
    infer_kinds,
    merge_schemas,
    read_federation,
    read_manifest,
    read_site,
    read_table,
    require_kinds,
    site_schema,
)

__all__ = [
    "IMAGES",
    "KINDS",
    "LABEL",
    "OBSERVATIONAL",
    "TABLES",
    "UNIFORM",
    "CategoricalSCM",
    "ClientData",
    "ClientsOnDemand",
    "ColumnSchema",
    "DiscreteNetwork",
    "EncodedSite",
    "FederationSchema",
    "ImageFederationSchema",
    "ImageSet",
    "ImageSite",
    "ImageSiteSchema",
    "LabelSkewSplit",
    "Manifest",
    "MixedDataset",
    "MixedSCM",
    "NetworkInfo",
    "Sampler",
    "Schedule",
    "SiteFederation",
    "SiteFormat",
    "SiteOptions",
    "SiteSchema",
    "SiteSpec",
    "check_federation",
    "client_names",
    "encode_site",
    "from_rows",
    "horizontal",
    "image_client",
    "infer_kinds",
    "label_skew",
    "list_networks",
    "load_network",
    "long_tail_counts",
    "make_mixed_data",
    "merge_image_schemas",
    "merge_schemas",
    "network_names",
    "random_discrete_network",
    "read_federation",
    "read_graph_file",
    "read_image_folder",
    "read_image_npz",
    "read_image_site",
    "read_manifest",
    "read_site",
    "read_table",
    "require_kinds",
    "site_schema",
    "to_rows",
]
