import SluiceS3

extension S3PrefixCopy {
    /// A join between two stores whose listings come in different key orders (SeaweedFS lists
    /// as a file system does, `a/b` before `a-b`; S3 and moto in UTF-8 byte order): a merge-join
    /// of the two would take present objects for missing ones, so the run refuses it before any
    /// copy or deletion.
    public struct ListingOrdersDiffer: Error, Sendable, CustomStringConvertible {
        /// The source prefix.
        public var source: S3Location
        /// The order the source's store lists in.
        public var sourceOrder: KeyOrder
        /// The destination prefix.
        public var destination: S3Location
        /// The order the destination's store lists in.
        public var destinationOrder: KeyOrder

        public var description: String {
            "the source \(source) is listed in \(Self.named(sourceOrder)) and the destination \(destination) in \(Self.named(destinationOrder)): "
                + "their listings cannot be joined (a sync, or a copy that deletes, compares them key by key); nothing was copied or deleted"
        }

        static func named(_ order: KeyOrder) -> String {
            order == .s3 ? "S3's key order (a-b before a/b)" : "a file system's (a/b before a-b)"
        }
    }

    /// The order a listing's keys come in, read up to the first two keys that the orders place
    /// differently: `.s3` or `.hierarchical`, or nil when no two keys tell them apart (the
    /// listing, read whole, fits both).
    ///
    /// - Throws: `S3Error` from the listing, named `whose` (`the source s3://A/P/`);
    ///   `S3ListingOutOfOrder` for a listing in neither order.
    static func order(of listing: S3ObjectListing, whose: String) async throws -> KeyOrder? {
        var listing = listing
        var previous: [UInt8]?
        do {
            while let object = try await listing.next() {
                let key = Array(object.key.utf8)
                // In S3's order (the listing checks it), and not in a file system's: S3's.
                if let previous, !KeyOrder.hierarchical.precedes(previous, key) {
                    await listing.close()
                    return .s3
                }
                previous = key
            }
            return nil
        } catch let error as S3ListingOutOfOrder where error.fitsHierarchical {
            await listing.close()
            return .hierarchical
        } catch var error as S3Error {
            await listing.close()
            error.message = "\(whose): \(error.message)"
            throw error
        } catch {
            await listing.close()
            throw error
        }
    }

    /// The order to join the source's and the destination's listings in when they are two
    /// stores' (one store lists in one order: nil, the join finds it as it goes). Both listings
    /// are read at once, each up to its first keys that tell the orders apart; once one is read
    /// whole and fits both, the other is not read further (nil: the join finds its order).
    ///
    /// - Throws: `ListingOrdersDiffer` when both tell and differ; what `order(of:whose:)` throws.
    func joinOrder(_ destination: S3Location, client: S3Client) async throws -> KeyOrder? {
        guard comparison != nil || deletes, let sourceClient, !sourceClient.sharesStore(with: client) else { return nil }
        let listings = (
            sourceClient.listObjects(bucket: source.bucket, prefix: source.key),
            client.listObjects(bucket: destination.bucket, prefix: destination.key)
        )
        let (source, whose) = (self.source, (from: "the source \(self.source)", to: "the destination \(destination)"))
        return try await withThrowingTaskGroup(of: (isSource: Bool, order: KeyOrder?).self) { group in
            group.addTask { (true, try await Self.order(of: listings.0, whose: whose.from)) }
            group.addTask { (false, try await Self.order(of: listings.1, whose: whose.to)) }
            var first: (isSource: Bool, order: KeyOrder)?
            while let (isSource, order) = try await group.next() {
                guard let order else {
                    group.cancelAll()
                    return first?.order
                }
                guard let (firstIsSource, firstOrder) = first else {
                    first = (isSource, order)
                    continue
                }
                guard order == firstOrder else {
                    let (from, to) = firstIsSource ? (firstOrder, order) : (order, firstOrder)
                    throw ListingOrdersDiffer(source: source, sourceOrder: from, destination: destination, destinationOrder: to)
                }
                return order
            }
            return first?.order
        }
    }
}
