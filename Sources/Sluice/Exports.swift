// `import Sluice` is the whole library: the modules below are its floors (ARCHITECTURE.md),
// re-exported so a user imports one name.
@_exported import SluicePrimitives
@_exported import SluiceByteSources
@_exported import SluiceRequests
@_exported import SluiceBoundStreams
@_exported import SluiceTransport
@_exported import SluiceMultipart
@_exported import SluiceTus
@_exported import SluiceS3
@_exported import SluiceDirectories
