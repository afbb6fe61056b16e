-- The quotations of one status in date order, for the lists of one status
-- sorted by date ("the drafts still valid on D, newest first":
-- filter=status:eq:draft&filter=valid_until:gte:D&sort=quotation_date:desc).
-- Without it such a list walks quotations_by_date through every status and
-- drops the others; with it a page reads only quotations of its status. The
-- last page of such a list, which reads on until the scan ends, reads the
-- status's older quotations instead of every older quotation of the branch.
CREATE INDEX quotations_by_status_date ON quotations (branch_id, status, quotation_date, id);
