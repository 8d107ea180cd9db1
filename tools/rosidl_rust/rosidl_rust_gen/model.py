"""Load the ``.idl`` files of one ROS 2 interface package into a small model."""

from dataclasses import dataclass, field
import pathlib
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple
import xml.etree.ElementTree as ElementTree

from rosidl_parser.definition import AbstractNestedType
from rosidl_parser.definition import Action
from rosidl_parser.definition import IdlLocator
from rosidl_parser.definition import Message
from rosidl_parser.definition import NamespacedType
from rosidl_parser.definition import Service
from rosidl_parser.parser import parse_idl_file

# Sub-folders of share/<pkg>/ that hold interface definitions.
DEFAULT_INTERFACE_DIRS = ('msg', 'srv', 'action')

# Packages that every action refers to, on top of what its .idl names: the
# goal/result services embed builtin_interfaces/Time and unique_identifier_msgs/UUID
# (these are found by walking the derived structures anyway) and the Action
# trait names action_msgs' CancelGoal service.
ACTION_IMPLICIT_DEPENDENCIES = ('action_msgs', 'builtin_interfaces', 'unique_identifier_msgs')


class GeneratorError(Exception):
    """An interface package cannot be turned into a Rust crate."""


@dataclass
class Namespace:
    """Everything one interface namespace (``<pkg>/<name>/...``) declares."""

    name: str
    messages: List[Message] = field(default_factory=list)
    services: List[Service] = field(default_factory=list)
    actions: List[Action] = field(default_factory=list)


@dataclass
class Package:
    """One interface package, ready to be emitted."""

    name: str
    version: str
    description: str
    namespaces: Dict[str, Namespace]
    dependencies: List[str]


@dataclass(frozen=True)
class IdlTuple:
    """An ``.idl`` file as rosidl passes it around: a base path and a path below it."""

    base: pathlib.Path
    relative: pathlib.Path

    @classmethod
    def parse(cls, text: str) -> 'IdlTuple':
        """Parse the ``<base>:<relative>`` form used by rosidl_cmake."""
        base, sep, relative = text.rpartition(':')
        if not sep or not base or not relative:
            raise GeneratorError(f"IDL tuple '{text}' is not of the form <base>:<relative path>")
        return cls(pathlib.Path(base), pathlib.Path(relative))

    @property
    def path(self) -> pathlib.Path:
        return self.base / self.relative


def find_idl_files(share_dir: pathlib.Path,
                   interface_dirs: Sequence[str] = DEFAULT_INTERFACE_DIRS) -> List[IdlTuple]:
    """List the ``.idl`` files installed in ``<prefix>/share/<pkg>``."""
    tuples = []
    for sub in interface_dirs:
        directory = share_dir / sub
        if directory.is_dir():
            for path in sorted(directory.glob('*.idl')):
                tuples.append(IdlTuple(share_dir, pathlib.Path(sub) / path.name))
    return tuples


def read_package_xml(path: Optional[pathlib.Path]) -> Tuple[str, str]:
    """Return (version, description) from a package.xml, with fallbacks."""
    version, description = '0.0.0', ''
    if path is not None and path.is_file():
        root = ElementTree.parse(path).getroot()
        version = (root.findtext('version') or version).strip()
        description = ' '.join((root.findtext('description') or '').split())
    return version, description


def _namespace_of(package: str, namespaced_type: NamespacedType, what: str) -> str:
    namespaces = list(namespaced_type.namespaces)
    if len(namespaces) != 2 or namespaces[0] != package:
        raise GeneratorError(
            f"{what} '{'/'.join(namespaces + [namespaced_type.name])}' is not declared as "
            f"'{package}/<namespace>/<Name>'; only two-level module paths are supported")
    namespace = namespaces[1]
    if not namespace.isidentifier():
        raise GeneratorError(f"namespace '{namespace}' of package '{package}' is not an identifier")
    return namespace


def _member_types(message: Message) -> Iterable:
    for member in message.structure.members:
        type_ = member.type
        if isinstance(type_, AbstractNestedType):
            type_ = type_.value_type
        yield type_


def _messages_of(namespace: Namespace) -> Iterable[Message]:
    yield from namespace.messages
    for service in namespace.services:
        yield service.request_message
        yield service.response_message
    for action in namespace.actions:
        yield from action_messages(action)


def action_messages(action: Action) -> List[Message]:
    """All messages an action brings, explicit and derived, in declaration order."""
    return [
        action.goal, action.result, action.feedback, action.feedback_message,
        action.send_goal_service.request_message, action.send_goal_service.response_message,
        action.get_result_service.request_message, action.get_result_service.response_message,
    ]


def load_package(name: str, idl_files: Sequence[IdlTuple],
                 package_xml: Optional[pathlib.Path] = None) -> Package:
    """Parse ``idl_files`` (all belonging to package ``name``) into a :class:`Package`."""
    if not idl_files:
        raise GeneratorError(f"package '{name}' has no .idl files to generate from")
    namespaces: Dict[str, Namespace] = {}
    for idl in idl_files:
        if not idl.path.is_file():
            raise GeneratorError(f"IDL file '{idl.path}' does not exist")
        try:
            parsed = parse_idl_file(IdlLocator(idl.base, idl.relative))
        except Exception as exc:  # lark raises many different exception types
            raise GeneratorError(f"failed to parse '{idl.path}': {exc}") from exc
        for element in parsed.content.elements:
            if isinstance(element, Message):
                ns = _namespace_of(name, element.structure.namespaced_type, 'message')
                namespaces.setdefault(ns, Namespace(ns)).messages.append(element)
            elif isinstance(element, Service):
                ns = _namespace_of(name, element.namespaced_type, 'service')
                namespaces.setdefault(ns, Namespace(ns)).services.append(element)
            elif isinstance(element, Action):
                ns = _namespace_of(name, element.namespaced_type, 'action')
                namespaces.setdefault(ns, Namespace(ns)).actions.append(element)

    if not namespaces:
        raise GeneratorError(f"the .idl files of package '{name}' declare no interfaces")

    dependencies: Set[str] = set()
    for namespace in namespaces.values():
        if namespace.actions:
            dependencies.update(ACTION_IMPLICIT_DEPENDENCIES)
        for message in _messages_of(namespace):
            for type_ in _member_types(message):
                if isinstance(type_, NamespacedType):
                    dependencies.add(type_.namespaces[0])
    dependencies.discard(name)

    # Emit in a stable order, whatever order the files were given in.
    for namespace in namespaces.values():
        namespace.messages.sort(key=lambda m: m.structure.namespaced_type.name)
        namespace.services.sort(key=lambda s: s.namespaced_type.name)
        namespace.actions.sort(key=lambda a: a.namespaced_type.name)

    version, description = read_package_xml(package_xml)
    ordered = {key: namespaces[key] for key in sorted(namespaces)}
    return Package(name, version, description, ordered, sorted(dependencies))
