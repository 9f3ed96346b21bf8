"""Data sets, samplers, synthetic generators and partitioners (bottom layer).

Everything here works offline: the benchmark networks are read from files that ship
inside installed packages, and the synthetic data are generated.
"""

from fedstruct.data.client import OBSERVATIONAL, ClientData, check_federation
from fedstruct.data.concepts import (
    ConceptDataset,
    ConceptPartition,
    concept_clients,
    make_concept_dataset,
)
from fedstruct.data.discrete import UNIFORM, DiscreteNetwork
from fedstruct.data.networks import NetworkInfo, list_networks, load_network, network_names
from fedstruct.data.partition import (
    LabelSkewSplit,
    Sampler,
    VariableSplit,
    horizontal,
    horizontal_interventions,
    label_skew,
    long_tail_counts,
    variable_subset_clients,
    variable_subsets,
    vertical_interventions,
)
from fedstruct.data.sachs import RowSampler, load_sachs_data, sachs_ground_truth
from fedstruct.data.schedule import Schedule
from fedstruct.data.scm import CategoricalSCM, random_discrete_network

__all__ = [
    "OBSERVATIONAL",
    "UNIFORM",
    "CategoricalSCM",
    "ClientData",
    "ConceptDataset",
    "ConceptPartition",
    "DiscreteNetwork",
    "LabelSkewSplit",
    "NetworkInfo",
    "RowSampler",
    "Sampler",
    "Schedule",
    "VariableSplit",
    "check_federation",
    "concept_clients",
    "horizontal",
    "horizontal_interventions",
    "label_skew",
    "list_networks",
    "load_network",
    "load_sachs_data",
    "long_tail_counts",
    "make_concept_dataset",
    "network_names",
    "random_discrete_network",
    "sachs_ground_truth",
    "variable_subset_clients",
    "variable_subsets",
    "vertical_interventions",
]
